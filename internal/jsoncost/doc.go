// Package jsoncost measures what a JSON document will cost to decode or re-encode, in one pass
// over its bytes and without decoding it: its nesting depth, and the size of its block-style
// YAML. Writes refuse what cannot be read back; responses avoid representations that explode.
package jsoncost
