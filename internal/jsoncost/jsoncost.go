package jsoncost

// Shape is what one pass over a JSON document finds.
type Shape struct {
	// Depth is the deepest nesting of objects and arrays (a scalar is 0, {} is 1).
	Depth int
	// BlockYAMLSize estimates the size of the document as block-style YAML: its own bytes plus
	// two spaces of indentation per nesting level on the line of every key and list item.
	BlockYAMLSize int
	// NestedBytes is the sum, over every object and array, of its size in bytes (each byte
	// counted once per level it is nested in). Code that re-reads each level of a document, as
	// json-patch's lazily decoded nodes do, works and allocates in proportion to it: it grows
	// with the square of the depth.
	NestedBytes int64
}

// Measure scans a JSON document. Malformed input gives a meaningless but bounded result.
func Measure(data []byte) Shape {
	shape := Shape{BlockYAMLSize: len(data)}
	depth, inString, escaped := 0, false, false
	for _, c := range data {
		shape.NestedBytes += int64(depth)
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			shape.NestedBytes++ // the opening byte belongs to its own level
			shape.Depth = max(shape.Depth, depth)
			shape.BlockYAMLSize += 2 * depth
		case c == '}' || c == ']':
			depth--
		case c == ',':
			shape.BlockYAMLSize += 2 * depth
		}
	}
	return shape
}

// MaxDecodableDepth is how deeply Go's JSON decoders (encoding/json, sigs.k8s.io/json) let a
// document nest.
const MaxDecodableDepth = 10000
