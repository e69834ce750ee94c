// Package patch applies the three non-apply patch types to an object's JSON: JSON patch
// (RFC 6902), JSON merge patch (RFC 7386) and strategic merge patch. It bounds what a patch may
// cost as kube-apiserver does (operations per JSON patch, bytes added by "copy" operations) and
// validates a patch before handing it to the patch libraries, whose code panics on some
// malformed patches (a JSON patch "replace" of the root without a value, a strategic merge patch
// whose merge key is an object). Its errors are *Error values saying whether the patch is
// malformed, too large, or does not apply; the handlers turn them into API statuses.
package patch
