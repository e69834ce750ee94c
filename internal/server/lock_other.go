//go:build !unix

package server

// lockDataDir does not lock where flock is not available.
func lockDataDir(string) (func(), error) { return func() {}, nil }
