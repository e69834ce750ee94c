package exepages

import "unsafe"

// unixAddr is the address of a mapping's first byte.
func unixAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
