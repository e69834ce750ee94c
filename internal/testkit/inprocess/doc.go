// Package inprocess starts lapis inside a test binary (server.Start) on a fresh data directory,
// for the suites that compare it with a reference over HTTP and need no separate process
// (test/against-reference-server, test/sequences).
package inprocess
