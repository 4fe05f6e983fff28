package offline

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
