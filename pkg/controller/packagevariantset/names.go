package packagevariantset

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Name limits of generated PackageVariants, as the reference computes them.
const (
	variantNameMaxLength  = 63
	variantNameHashLength = 8
)

// variantIdentifier identifies the variant a set makes for one downstream:
// "<set>-<repo>-<package>". Existing variants are keyed by the identifier
// computed from their spec, as the reference does, so switching
// controllers keeps every variant.
func variantIdentifier(setName, repo, pkg string) string {
	return setName + "-" + repo + "-" + pkg
}

// variantName is the object name for an identifier: the identifier itself
// when it is a valid name of at most 63 characters; its first 54
// characters, "-" and 8 hex digits of its SHA-1 when it is only too long.
// An identifier that is not a valid name at all (a "/" of a nested package,
// upper case) is made valid deterministically: lower-cased, other
// characters replaced by "-", and the hash always appended so that two
// identifiers that differ only in those characters never share a name.
func variantName(id string) string {
	sum := sha1.Sum([]byte(id))
	hash := hex.EncodeToString(sum[:])[:variantNameHashLength]
	stub := variantNameMaxLength - variantNameHashLength - 1
	if len(validation.IsDNS1123Subdomain(id)) == 0 {
		if len(id) <= variantNameMaxLength {
			return id
		}
		// Exactly the reference's name, unless cutting left a '.' before
		// the hash, which no object name may have.
		if name := id[:stub] + "-" + hash; len(validation.IsDNS1123Subdomain(name)) == 0 {
			return name
		}
	}
	var b strings.Builder
	for _, r := range strings.ToLower(id) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	clean := strings.Trim(b.String(), "-.")
	if len(clean) > stub {
		clean = strings.TrimRight(clean[:stub], "-.")
	}
	if clean == "" {
		return "pv-" + hash
	}
	return clean + "-" + hash
}
