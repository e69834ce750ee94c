// Package kubectli18n keeps the bundled kubectl's message catalogue from being loaded in a lapis
// process that does not run kubectl. kubectl's packages translate their help texts in their
// package initialisers; the first translation unpacks and parses the catalogue (~15 ms of every
// lapis start). Imported by package main, it is initialised right after kubectl's i18n package
// (Go initialises ready packages in import-path order, and github.com sorts before k8s.io) and
// before the first translation.
package kubectli18n
