package helper

import (
	"reflect"

	"sigs.k8s.io/yaml"

	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
)

// HoldsWhatWasWritten reports whether a package's stored files are exactly
// the files a write sent, apart from what Porch's render records in the
// Kptfile: its status (the Rendered condition and renderStatus), with the
// Kptfile re-encoded. A client that lost the answer to its write and reads
// the package back can take what it reads for its own write only then:
// anything else may be a person's change made in between (Porch answers
// reads at the latest commit, whoever made it), or functions of the
// pipeline changing files, which a client cannot tell apart.
func HoldsWhatWasWritten(sent, stored map[string]string) bool {
	if len(sent) != len(stored) {
		return false
	}
	for path, content := range sent {
		got, ok := stored[path]
		if !ok {
			return false
		}
		if path == kptfilev1.KptFileName {
			if !sameKptfileApartFromStatus(content, got) {
				return false
			}
			continue
		}
		if got != content {
			return false
		}
	}
	return true
}

// sameKptfileApartFromStatus compares two Kptfiles as objects, without
// their status; a Kptfile that does not parse equals only itself.
func sameKptfileApartFromStatus(a, b string) bool {
	var ma, mb map[string]any
	if yaml.Unmarshal([]byte(a), &ma) != nil || yaml.Unmarshal([]byte(b), &mb) != nil {
		return a == b
	}
	delete(ma, "status")
	delete(mb, "status")
	return reflect.DeepEqual(ma, mb)
}
