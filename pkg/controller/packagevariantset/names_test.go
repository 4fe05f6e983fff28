package packagevariantset

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestVariantName(t *testing.T) {
	long := "my-set-" + strings.Repeat("r", 40) + "-" + strings.Repeat("p", 30)
	cases := map[string]struct {
		id   string
		want string
	}{
		"short valid identifier is the name": {
			id: "edge-deploy-01-app", want: "edge-deploy-01-app",
		},
		"exactly 63 characters": {
			id: strings.Repeat("a", 63), want: strings.Repeat("a", 63),
		},
		// The reference: first 54 characters, "-", 8 hex digits of SHA-1.
		"too long: reference truncation and hash": {
			id: long, want: long[:54] + "-" + "8ca71ee1",
		},
		"nested package path is made valid": {
			id: "set-deploy-apps/foo", want: "set-deploy-apps-foo-" + sha8("set-deploy-apps/foo"),
		},
		"upper case is made valid": {
			id: "Set-Deploy-App", want: "set-deploy-app-" + sha8("Set-Deploy-App"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := variantName(tc.id)
			if got != tc.want {
				t.Errorf("variantName(%q) = %q, want %q", tc.id, got, tc.want)
			}
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 || len(got) > 63 {
				t.Errorf("%q is not a valid name of at most 63 characters: %v", got, errs)
			}
			if variantName(tc.id) != got {
				t.Error("not deterministic")
			}
		})
	}
	if variantName("set-deploy-a/b") == variantName("set-deploy-a-b") {
		t.Error("a nested path and its dashed look-alike share a name")
	}
	// Invalid in every character still yields a valid name.
	for _, id := range []string{"///", "ÄÖÜ-ß", strings.Repeat("/", 100), "a." + strings.Repeat("b", 60)} {
		if got := variantName(id); len(validation.IsDNS1123Subdomain(got)) > 0 || len(got) > 63 {
			t.Errorf("variantName(%q) = %q is invalid", id, got)
		}
	}
}

func TestVariantIdentifier(t *testing.T) {
	if got := variantIdentifier("set", "deploy", "app"); got != "set-deploy-app" {
		t.Errorf("identifier %q", got)
	}
}

func sha8(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])[:8]
}
