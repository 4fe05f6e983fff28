package kptengine

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/comments"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Heal is what Porch does to the files of a resources update before it
// renders them: every resource of the update that was in the revision
// before (same apiVersion, kind, namespace and name) gets the comments the
// old one had, copied by kyaml (a client that edits a resource through Go
// structs, or replaces a map, loses its comments; Porch puts them back),
// and every resource file is written out again. Resources holding ytt
// template comments ("#@", "#!") are left alone, as Porch leaves them.
func Heal(old, updated map[string]string) (files map[string]string, err error) {
	defer recoverPanic(&err, "heal package")
	before, err := (&packageReader{files: old, extra: map[string]string{}}).Read()
	if err != nil {
		return nil, fmt.Errorf("read the revision's files: %w", err)
	}
	copyComments := kio.FilterFunc(func(nodes []*yaml.RNode) ([]*yaml.RNode, error) {
		for _, n := range nodes {
			text := n.MustString()
			for _, o := range before {
				if !sameResource(n, o) {
					continue
				}
				old := o.MustString()
				// A resource the update left as it was has every comment
				// already; copying them again changes nothing.
				if old == text || templated(text) || templated(old) {
					continue
				}
				if err := comments.CopyComments(o, n); err != nil {
					return nil, fmt.Errorf("copy comments: %w", err)
				}
			}
		}
		return nodes, nil
	})
	return filterPackage(updated, copyComments)
}

func sameResource(a, b *yaml.RNode) bool {
	return a.GetNamespace() == b.GetNamespace() && a.GetName() == b.GetName() &&
		a.GetApiVersion() == b.GetApiVersion() && a.GetKind() == b.GetKind()
}

// templated reports whether a resource's text holds ytt template comments.
func templated(s string) bool {
	return strings.Contains(s, "#@") || strings.Contains(s, "#!")
}
