// Package input reads what variantctl and porchsim-apiserver are given: YAML
// files and directories of Repositories, PackageVariants, PackageVariantSets,
// PackageRevisions (with their resources) and in-cluster objects, kpt
// package directories, and snapshots of a live fleet. It checks each object
// as the API server would before anything runs, names the file, document,
// object and field of every problem, and loads what it read into porchsim.
package input

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// Source is where an object was read from.
type Source struct {
	File string
	// Doc is the 1-based document number in a multi-document file; Item
	// the 1-based item of a List document (0 when not in a List).
	Doc, Item int
}

func (s Source) String() string {
	switch {
	case s.Doc == 0:
		return s.File
	case s.Item > 0:
		return fmt.Sprintf("%s (document %d, item %d)", s.File, s.Doc, s.Item)
	default:
		return fmt.Sprintf("%s (document %d)", s.File, s.Doc)
	}
}

// Error says why some input cannot be used: where it is, which object
// and field, and why.
type Error struct {
	Source Source
	// Object is "Kind namespace/name" when known.
	Object string
	Msg    string
}

func (e *Error) Error() string {
	where := e.Source.String()
	if e.Object != "" {
		where += ": " + e.Object
	}
	if where == "" {
		return e.Msg
	}
	return where + ": " + e.Msg
}

// Errors are all the problems found in the input.
type Errors []*Error

func (e Errors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "\n")
}

// Sourced pairs an object with where it came from.
type Sourced[T any] struct {
	Obj    T
	Source Source
}

// Revision is a package revision with its files.
type Revision struct {
	PR     *porchv1alpha1.PackageRevision
	Files  map[string]string
	Source Source
	// FromDir marks a revision loaded from a package directory.
	FromDir bool
}

// Input is everything a run starts from.
type Input struct {
	Repositories []Sourced[*configv1alpha1.Repository]
	Revisions    []*Revision
	Variants     []Sourced[*configv1alpha1.PackageVariant]
	Sets         []Sourced[*configv1alpha2.PackageVariantSet]
	// Objects are other in-cluster objects (config injection sources,
	// objectSelector targets).
	Objects []Sourced[*unstructured.Unstructured]
	// Notes are things a person should know about how the input was read
	// (a skipped directory, an ignored cluster-scoped object).
	Notes []string
	// FileSource, when set, reads the files of revisions given without
	// them (Revision.Files nil), when a run first needs them: a live
	// cluster serves each from git, so a diff reads only those it needs.
	FileSource func(ctx context.Context, namespace, name string) (map[string]string, error)

	// lazyFiles lets revisions come without their PackageRevisionResources
	// (a snapshot for variantctl diff); FileSource then says which are
	// missing if a run needs them.
	lazyFiles bool

	// resources are PackageRevisionResources waiting for their revision.
	resources map[string]Sourced[*porchv1alpha1.PackageRevisionResources]
	// seen is where each object was read, to report one given twice.
	seen map[objectKey]Source
}

// objectKey identifies an object as the API server does: two objects of
// one kind (in any version of its group) cannot share a namespace and name.
type objectKey struct {
	group, kind, namespace, name string
}

// The apiVersions the input may hold.
var (
	configV1alpha1 = configv1alpha1.SchemeGroupVersion.String()
	configV1alpha2 = configv1alpha2.SchemeGroupVersion.String()
	porchV1alpha1  = porchv1alpha1.SchemeGroupVersion.String()
)

// ignoredKinds are cluster-scoped kinds a directory of manifests often
// holds; they play no part in a run.
var ignoredKinds = map[string]bool{
	"Namespace": true, "CustomResourceDefinition": true, "ClusterRole": true,
	"ClusterRoleBinding": true, "APIService": true,
}

// ReadPaths reads every YAML document of the given files and directories
// (recursively: *.yaml, *.yml and *.json; a directory holding a Kptfile is
// a kpt package and is skipped with a note). It reports every problem it
// finds, not just the first.
func ReadPaths(paths []string) (*Input, error) {
	return readPaths(paths, false)
}

// ReadSnapshot reads a saved cluster (kubectl get ... -o yaml) as ReadPaths
// does, except that PackageRevisions may come without their
// PackageRevisionResources: a run that needs the files of one of those
// fails, naming it and the command that saves it.
func ReadSnapshot(paths []string) (*Input, error) {
	in, err := readPaths(paths, true)
	in.FileSource = func(_ context.Context, namespace, name string) (map[string]string, error) {
		return nil, fmt.Errorf("the snapshot holds no PackageRevisionResources %s/%s and the run needs its files; save them into the snapshot with: kubectl get packagerevisionresources -n %s %s -o yaml",
			namespace, name, namespace, name)
	}
	return in, err
}

func readPaths(paths []string, lazyFiles bool) (*Input, error) {
	in := &Input{resources: map[string]Sourced[*porchv1alpha1.PackageRevisionResources]{}, seen: map[objectKey]Source{}, lazyFiles: lazyFiles}
	var errs Errors
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			errs = append(errs, &Error{Source: Source{File: p}, Msg: statMessage(err)})
			continue
		}
		if !info.IsDir() {
			errs = append(errs, in.readFile(p)...)
			continue
		}
		walkErr := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				errs = append(errs, &Error{Source: Source{File: path}, Msg: err.Error()})
				return nil
			}
			if d.IsDir() {
				if path != p && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				if _, err := os.Stat(filepath.Join(path, "Kptfile")); err == nil && path != p {
					in.Notes = append(in.Notes, fmt.Sprintf("skipped %s: it is a kpt package; load it with --package REPO/PACKAGE=%s", path, path))
					return filepath.SkipDir
				}
				return nil
			}
			switch strings.ToLower(filepath.Ext(path)) {
			case ".yaml", ".yml", ".json":
				errs = append(errs, in.readFile(path)...)
			}
			return nil
		})
		if walkErr != nil {
			errs = append(errs, &Error{Source: Source{File: p}, Msg: walkErr.Error()})
		}
	}
	errs = append(errs, in.attachResources()...)
	if len(errs) > 0 {
		return in, errs
	}
	return in, nil
}

func statMessage(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return "no such file or directory"
	}
	return err.Error()
}

func (in *Input) readFile(path string) Errors {
	data, err := os.ReadFile(path)
	if err != nil {
		return Errors{{Source: Source{File: path}, Msg: err.Error()}}
	}
	return in.Read(path, data)
}

// Read adds the YAML documents of one file's content.
func (in *Input) Read(file string, data []byte) Errors {
	if in.resources == nil {
		in.resources = map[string]Sourced[*porchv1alpha1.PackageRevisionResources]{}
	}
	if in.seen == nil {
		in.seen = map[objectKey]Source{}
	}
	var errs Errors
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if err == io.EOF {
			break
		}
		src := Source{File: file, Doc: doc}
		if err != nil {
			errs = append(errs, &Error{Source: src, Msg: "cannot split the file into YAML documents: " + err.Error()})
			break
		}
		if len(raw) > MaxRequestBytes && !isList(raw) {
			// Refused before it is decoded: a document of hundreds of
			// megabytes would take gigabytes to decode.
			errs = append(errs, &Error{Source: src, Msg: tooLarge(len(raw), "as YAML")})
			continue
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			errs = append(errs, &Error{Source: src, Msg: "not valid YAML: " + err.Error()})
			continue
		}
		if len(bytes.TrimSpace(js)) == 0 || string(bytes.TrimSpace(js)) == "null" {
			continue // an empty document
		}
		var tm struct {
			metav1.TypeMeta `json:",inline"`
			Items           []jsonRaw `json:"items"`
		}
		if err := yaml.Unmarshal(js, &tm); err != nil {
			errs = append(errs, &Error{Source: src, Msg: "not a Kubernetes object: " + err.Error()})
			continue
		}
		if tm.Kind == "List" || (strings.HasSuffix(tm.Kind, "List") && tm.Items != nil) {
			for i, item := range tm.Items {
				errs = append(errs, in.add(Source{File: file, Doc: doc, Item: i + 1}, item)...)
			}
			continue
		}
		errs = append(errs, in.add(src, js)...)
	}
	return errs
}

// MaxRequestBytes is what the API server accepts in one request (its
// --max-request-bytes default, 3 MiB): an object larger than that could
// never be created, so no command takes it as input.
const MaxRequestBytes = 3 * 1024 * 1024

func tooLarge(n int, as string) string {
	return fmt.Sprintf("is %.1f MiB %s, more than the API server accepts in one request (%d MiB): it could never be created; split it or move data out of it",
		float64(n)/(1024*1024), as, MaxRequestBytes/(1024*1024))
}

// isList reports whether a YAML document is a List (kind: List at the top
// level, as kubectl get -o yaml writes a snapshot), whose items are
// objects of their own.
func isList(raw []byte) bool {
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(line) > 0 && line[0] != ' ' && line[0] != '\t' && bytes.HasPrefix(t, []byte("kind:")) {
			return bytes.HasSuffix(bytes.TrimSpace(bytes.TrimPrefix(t, []byte("kind:"))), []byte("List"))
		}
	}
	return false
}

// jsonRaw keeps a List item's JSON as it is.
type jsonRaw []byte

func (r *jsonRaw) UnmarshalJSON(b []byte) error { *r = append((*r)[:0], b...); return nil }

// add decodes one object and checks its metadata as the API server would
// when it is created, so that every command refuses what a cluster refuses.
func (in *Input) add(src Source, js []byte) Errors {
	var tm metav1.TypeMeta
	_ = yaml.Unmarshal(js, &tm)
	fail := func(obj, format string, args ...any) Errors {
		return Errors{{Source: src, Object: obj, Msg: fmt.Sprintf(format, args...)}}
	}
	if tm.APIVersion == "" || tm.Kind == "" {
		return fail("", "apiVersion and kind are required")
	}
	if len(js) > MaxRequestBytes {
		return fail(tm.Kind+" "+nameOf(js), "%s", tooLarge(len(js), "as JSON"))
	}
	// Decode as the API server does: field names are case-sensitive, a
	// number is not a string, unknown and duplicate fields are errors.
	strict := func(into any, kind string) Errors {
		strictErrs, err := sigsjson.UnmarshalStrict(js, into)
		if err != nil {
			return fail(kind+" "+nameOf(js), "%s", cleanDecodeError(err))
		}
		if len(strictErrs) > 0 {
			msgs := make([]string, len(strictErrs))
			for i, e := range strictErrs {
				msgs[i] = cleanDecodeError(e)
			}
			return fail(kind+" "+nameOf(js), "%s", strings.Join(msgs, "; "))
		}
		return nil
	}
	group := schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind).Group
	if k, ok := servedKindOf(tm); ok {
		obj := k.empty()
		if errs := strict(obj, tm.Kind); errs != nil {
			return errs
		}
		if errs := in.checkMetadata(src, group, tm.Kind, obj, k.rule); errs != nil {
			return errs
		}
		in.Hold(obj, src)
		return nil
	}
	switch {
	case strings.HasPrefix(tm.APIVersion, "config.porch.kpt.dev/") || strings.HasPrefix(tm.APIVersion, "porch.kpt.dev/"):
		return fail(tm.Kind+" "+nameOf(js), "apiVersion %s kind %s is not served; use %s PackageVariant or Repository, %s PackageVariantSet, %s PackageRevision or PackageRevisionResources",
			tm.APIVersion, tm.Kind, configV1alpha1, configV1alpha2, porchV1alpha1)
	case ignoredKinds[tm.Kind]:
		in.Notes = append(in.Notes, fmt.Sprintf("ignored %s %s in %s: cluster-scoped objects play no part in a run", tm.Kind, nameOf(js), src))
	default:
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return fail(tm.Kind+" "+nameOf(js), "%s", err)
		}
		if u.GetName() == "" {
			return fail(tm.Kind, "metadata.name is required")
		}
		if errs := in.checkMetadata(src, group, tm.Kind, u, anyKindName); errs != nil {
			return errs
		}
		in.Objects = append(in.Objects, Sourced[*unstructured.Unstructured]{u, src})
	}
	return nil
}

// attachResources gives each PackageRevision the files of its
// PackageRevisionResources.
func (in *Input) attachResources() Errors {
	var errs Errors
	used := map[string]bool{}
	for _, rev := range in.Revisions {
		if rev.Files != nil {
			continue
		}
		key := rev.PR.Namespace + "/" + rev.PR.Name
		prr, ok := in.resources[key]
		if !ok && in.lazyFiles {
			continue
		}
		if !ok {
			errs = append(errs, &Error{Source: rev.Source, Object: "PackageRevision " + key,
				Msg: fmt.Sprintf("its files are missing: add its PackageRevisionResources (kubectl get packagerevisionresources -n %s %s -o yaml), or load the package with --package", rev.PR.Namespace, rev.PR.Name)})
			continue
		}
		used[key] = true
		rev.Files = prr.Obj.Spec.Resources
		if rev.Files == nil {
			rev.Files = map[string]string{}
		}
	}
	keys := make([]string, 0, len(in.resources))
	for k := range in.resources {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !used[k] {
			prr := in.resources[k]
			errs = append(errs, &Error{Source: prr.Source, Object: "PackageRevisionResources " + k,
				Msg: "no PackageRevision of that name is given; add it (kubectl get packagerevisions -o yaml)"})
		}
	}
	in.resources = map[string]Sourced[*porchv1alpha1.PackageRevisionResources]{}
	return errs
}
