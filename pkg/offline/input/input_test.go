package input

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReadMetadata: reading the input refuses what the API server refuses
// when an object is created (names, namespaces, labels, annotations, an
// object given twice) and accepts what it accepts, so that validate,
// expand and render all refuse the same input.
func TestReadMetadata(t *testing.T) {
	variant := func(meta string) string {
		return "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageVariant\nmetadata: " + meta +
			"\nspec: {upstream: {repo: r, package: p}, downstream: {repo: d, package: p}}\n"
	}
	configMap := func(meta string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: " + meta + "\ndata: {a: b}\n"
	}
	const sep = "---\n"
	cases := map[string]struct {
		reason string
		input  string
		// want are the errors, one a line; none for valid input.
		want []string
	}{
		"Valid": {
			reason: "names, namespaces, labels and annotations the API server accepts",
			input: variant("{name: app.v1-x, namespace: team, labels: {example.com/tier: base}, annotations: {note: free text}}") + sep +
				variant("{name: app.v1-x, namespace: other}") + sep +
				configMap("{name: app.v1-x, namespace: team}") + sep +
				variant("{generateName: app-}") + sep +
				"apiVersion: porch.kpt.dev/v1alpha1\nkind: PackageRevision\nmetadata: {namespace: team}\nspec: {packageName: p, repository: r, workspaceName: v1}\n",
		},
		"NameWithASlash": {
			reason: "a custom resource name is a DNS subdomain",
			input:  variant("{name: a/b, namespace: team}"),
			want: []string{`in.yaml (document 1): PackageVariant team/a/b: metadata.name: Invalid value: "a/b": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', ` +
				`and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		},
		"UpperCaseName": {
			reason: "upper case is not allowed",
			input:  variant("{name: App}"),
			want: []string{`in.yaml (document 1): PackageVariant App: metadata.name: Invalid value: "App": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', ` +
				`and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		},
		"NoName": {
			reason: "a name (or generateName) is required",
			input:  variant("{namespace: team}"),
			want:   []string{`in.yaml (document 1): PackageVariant team/(no name): metadata.name: Required value: name or generateName is required`},
		},
		"LongName": {
			reason: "a name has at most 253 characters",
			input:  variant("{name: " + strings.Repeat("a", 254) + "}"),
			want:   []string{`in.yaml (document 1): PackageVariant ` + strings.Repeat("a", 254) + `: metadata.name: Invalid value: "` + strings.Repeat("a", 254) + `": must be no more than 253 characters`},
		},
		"BadNamespace": {
			reason: "a namespace is a DNS label: no dots, at most 63 characters",
			input:  variant("{name: app, namespace: team.a}"),
			want:   []string{`in.yaml (document 1): PackageVariant team.a/app: metadata.namespace: Invalid value: "team.a": must not contain dots`},
		},
		"BadLabelAndNamespaceTogether": {
			reason: "every problem of an object is reported, not just the first",
			input:  variant("{name: app, namespace: Team, labels: {'a b': c}}"),
			want: []string{
				`in.yaml (document 1): PackageVariant Team/app: metadata.namespace: Invalid value: "Team": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', ` +
					`and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				`in.yaml (document 1): PackageVariant Team/app: metadata.labels: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', ` +
					`and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			},
		},
		"GivenTwice": {
			reason: "two objects of one kind cannot share a namespace and name",
			input:  variant("{name: app, namespace: team}") + sep + variant("{name: app, namespace: team}"),
			want:   []string{`in.yaml (document 2): PackageVariant team/app: metadata.name: Duplicate value: "app": a PackageVariant of that name is also given in in.yaml (document 1)`},
		},
		"ConfigMapGivenTwice": {
			reason: "the same holds for in-cluster objects",
			input:  configMap("{name: settings, namespace: team}") + sep + "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSuffix(configMap("{name: settings, namespace: team}"), "\n"), "\n", "\n  ") + "\n",
			want:   []string{`in.yaml (document 2, item 1): ConfigMap team/settings: metadata.name: Duplicate value: "settings": a ConfigMap of that name is also given in in.yaml (document 1)`},
		},
		"ObjectNameWithASlash": {
			reason: "no kind allows a / in a name",
			input:  configMap("{name: a/b}"),
			want:   []string{`in.yaml (document 1): ConfigMap a/b: metadata.name: Invalid value: "a/b": may not contain '/'`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := &Input{}
			var got []string
			for _, e := range in.Read("in.yaml", []byte(tc.input)) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nRead: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestReadRefusesWhatTheAPIServerCannotTake: an object over the API
// server's request size is refused, naming the file, the document and the
// object; a document that large is refused before it is decoded; a List
// (a snapshot) may be larger, its items may not.
func TestReadRefusesWhatTheAPIServerCannotTake(t *testing.T) {
	big := strings.Repeat("x", MaxRequestBytes)
	configMap := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: team}\ndata: {a: " + big + "}\n"
	}
	var in Input
	errs := in.Read("in.yaml", []byte(configMap("huge")+"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: small, namespace: team}\n"))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "in.yaml (document 1): ") ||
		!strings.Contains(errs[0].Error(), "is 3.0 MiB as YAML, more than the API server accepts in one request (3 MiB)") {
		t.Errorf("errors %v, want the first document refused as too large", errs)
	}
	if len(in.Objects) != 1 {
		t.Errorf("%d objects read, want the small one", len(in.Objects))
	}

	list := "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: huge, namespace: team}\n  data: {a: " + big + "}\n" +
		"- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: small, namespace: team}\n"
	var fromList Input
	errs = fromList.Read("snapshot.yaml", []byte(list))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "snapshot.yaml (document 1, item 1): ConfigMap team/huge: is 3.0 MiB as JSON") {
		t.Errorf("errors %v, want the List's huge item refused by name", errs)
	}
	if len(fromList.Objects) != 1 {
		t.Errorf("%d objects read from the List, want the small one", len(fromList.Objects))
	}
}
