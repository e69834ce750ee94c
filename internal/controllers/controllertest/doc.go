// Package controllertest is what the controllers' tests share: waiting for a controller to act,
// and making the namespaces it acts on.
package controllertest
