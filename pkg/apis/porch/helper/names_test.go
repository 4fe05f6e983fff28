package helper

import "testing"

// TestPackageRevisionUID: the UID real Porch gave revision
// blueprints.app.v1 in namespace facts (measured), and the same UID for a
// re-created revision of the same name.
func TestPackageRevisionUID(t *testing.T) {
	if got, want := PackageRevisionUID("facts", "blueprints.app.v1"), "2e62714c-4cb5-5edc-956d-208c08b405b3"; string(got) != want {
		t.Errorf("PackageRevisionUID = %s, want %s (real Porch)", got, want)
	}
	if PackageRevisionUID("facts", "blueprints.app.v1") == PackageRevisionUID("facts", "blueprints.app.v2") {
		t.Error("two names got one UID")
	}
}
