package input

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEachDocument(t *testing.T) {
	refused := errors.New("refused")
	cases := map[string]struct {
		data    string
		refuse  string // the kind of the document fn refuses
		want    []string
		wantErr string
	}{
		"an empty document is passed over, and counts in the numbers": {
			data:    "kind: A\n---\n# only a comment\n---\n{kind: B}\n",
			refuse:  "B",
			want:    []string{"A", "B"},
			wantErr: "document 3: refused",
		},
		"JSON": {
			data: `{"kind": "A"}`,
			want: []string{"A"},
		},
		"a document that does not decode ends the walk, named": {
			data:    "kind: A\n---\nkind: [B\n---\nkind: C\n",
			want:    []string{"A"},
			wantErr: "document 2: ",
		},
		"fn's error names the document": {
			data:    "kind: A\n---\nkind: B\n---\nkind: C\n",
			refuse:  "B",
			want:    []string{"A", "B"},
			wantErr: "document 2: refused",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			err := EachDocument([]byte(tc.data), func(obj map[string]any) error {
				got = append(got, obj["kind"].(string))
				if obj["kind"] == tc.refuse {
					return refused
				}
				return nil
			})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("documents (-want +got):\n%s", diff)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one starting %q", err, tc.wantErr)
			case tc.refuse != "" && !errors.Is(err, refused):
				t.Errorf("error %v does not wrap fn's", err)
			}
		})
	}
}
