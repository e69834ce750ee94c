// Package lapistest starts a lapis API server for Go tests and hands back a *rest.Config for
// it, the way envtest does for kube-apiserver, in about a quarter of a second:
//
//	func TestSomething(t *testing.T) {
//		cfg := lapistest.Start(t, lapistest.Options{}).Config
//		client := kubernetes.NewForConfigOrDie(cfg)
//		...
//	}
//
// It runs the lapis binary (`lapis serve` on a temporary data directory, on a free port) and
// stops it (SIGTERM) when the test ends. The binary is, in order: Options.Bin, $LAPIS_BIN,
// `lapis` on PATH, or built with `go build` from Options.SourceDir (a clone of lapis). The
// package is its own module and imports nothing of lapis: using it adds client-go to a
// project, not lapis's dependencies or its replace directives.
package lapistest
