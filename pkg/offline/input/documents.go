package input

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// EachDocument calls fn with each document of a YAML or JSON stream that is
// not empty, decoded. It stops at the first document that does not decode or
// that fn refuses, and its error names that document by its number (the
// first is 1). It is the plain reading of a manifest file; Read is the checked
// one, which goes on past a bad document to report them all.
func EachDocument(data []byte, fn func(obj map[string]any) error) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for doc := 1; ; doc++ {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("document %d: %w", doc, err)
		}
		if len(obj) == 0 {
			continue
		}
		if err := fn(obj); err != nil {
			return fmt.Errorf("document %d: %w", doc, err)
		}
	}
}
