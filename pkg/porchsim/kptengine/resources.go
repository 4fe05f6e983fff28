package kptengine

import (
	"bytes"
	"fmt"
	"path"
	"strings"

	kptapi "github.com/kptdev/kpt/pkg/api/kptfile/v1"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// filterPackage runs kio filters over a package the way Porch's clone and
// upgrade tasks do (Porch's packageReader and packageWriter): every *.yaml,
// *.yml and Kptfile is parsed into resources annotated with their file,
// the filters run over all of them, and each file is written back from the
// resources that carry its path. Other files are passed through untouched.
//
// What this implies is Porch's behaviour too and is kept on purpose: a
// YAML file is re-serialised (sequences in compact style), and a YAML file
// left with no resource disappears.
func filterPackage(files map[string]string, filters ...kio.Filter) (map[string]string, error) {
	r := &packageReader{files: files, extra: map[string]string{}}
	w := &packageWriter{files: map[string]string{}}
	err := kio.Pipeline{
		Inputs:  []kio.Reader{r},
		Filters: filters,
		Outputs: []kio.Writer{w},
	}.Execute()
	if err != nil {
		return nil, err
	}
	for p, content := range r.extra {
		w.files[p] = content
	}
	return w.files, nil
}

// packageReader reads a package's resource files into annotated nodes.
type packageReader struct {
	files map[string]string
	// extra receives the files that are not read as resources.
	extra map[string]string
}

var _ kio.Reader = &packageReader{}

// Read implements kio.Reader.
func (r *packageReader) Read() ([]*yaml.RNode, error) {
	var nodes []*yaml.RNode
	for _, p := range sortedPaths(r.files) {
		content := r.files[p]
		if !isResourceFile(p) {
			r.extra[p] = content
			continue
		}
		read, err := (&kio.ByteReader{
			Reader:            strings.NewReader(content),
			SetAnnotations:    map[string]string{kioutil.PathAnnotation: p},
			DisableUnwrapping: true,
		}).Read()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		nodes = append(nodes, read...)
	}
	return nodes, nil
}

// isResourceFile tells whether Porch reads a file as KRM resources when it
// runs a filter over a package.
func isResourceFile(p string) bool {
	base := path.Base(p)
	ext := path.Ext(base)
	return ext == ".yaml" || ext == ".yml" || base == kptapi.KptFileName
}

// packageWriter writes annotated nodes back into files, one file per path.
type packageWriter struct {
	files map[string]string
}

var _ kio.Writer = &packageWriter{}

// Write implements kio.Writer.
func (w *packageWriter) Write(nodes []*yaml.RNode) error {
	byPath := map[string][]*yaml.RNode{}
	var order []string
	for _, n := range nodes {
		p := nodePath(n)
		if _, seen := byPath[p]; !seen {
			order = append(order, p)
		}
		byPath[p] = append(byPath[p], n)
	}
	for _, p := range order {
		var buf bytes.Buffer
		bw := kio.ByteWriter{
			Writer: &buf,
			ClearAnnotations: []string{
				kioutil.PathAnnotation,
				kioutil.LegacyPathAnnotation, //nolint:staticcheck // kyaml still sets it
			},
		}
		if err := bw.Write(byPath[p]); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		w.files[p] = buf.String()
	}
	return nil
}

// nodePath is the file a node is written to: its path annotation, or, for
// a resource a filter generated without one, <namespace>/<name>.yaml as
// Porch names it.
func nodePath(n *yaml.RNode) string {
	if p, ok := n.GetAnnotations()[kioutil.PathAnnotation]; ok {
		return p
	}
	ns := n.GetNamespace()
	if ns == "" {
		ns = "non-namespaced"
	}
	name := n.GetName()
	if name == "" {
		name = "unnamed"
	}
	return path.Join(ns, name+".yaml")
}
