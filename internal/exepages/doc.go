// Package exepages hands back the pages of lapis's own executable that only starting used.
//
// lapis's binary holds k8s.io/kubernetes, etcd and kubectl: ~56 MB of code and ~67 MB of
// read-only data. Starting runs every package's initialisation and builds kube's schemes,
// strategies and OpenAPI models, and the kernel maps the pages around each page touched (64 KiB,
// or a whole large folio of the page cache), so right after start ~95 MiB of the file is mapped
// while what lapis runs afterwards touches ~40 MiB. Release unmaps the read-only pages; the ones
// still in use are mapped again on their next touch (a minor fault: the pages stay in the page
// cache, where the kernel may reclaim them as it would any unmapped file page). Releasable names
// those mappings for any process (test/bench/pageout releases a baseline build's the same way).
//
// Only mappings of the executable that are read-only and hold no privately modified page (the
// dynamic loader's relocated tables, a debugger's breakpoints) are released: dropping a modified
// page would read the file's original back.
package exepages
