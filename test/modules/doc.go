// Package modules runs the tests of the Go modules nested in lapis's repository that `go test
// ./...` from its root would otherwise leave out (lapistest), so that the README's one test
// command runs every test.
package modules
