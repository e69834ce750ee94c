// Package poll waits in tests for what a server does in the background: a condition is asked
// again every Interval until it holds or the time given runs out. The suites that start lapis
// (acceptance, clientgo, replicas) share it rather than each keeping a copy.
package poll
