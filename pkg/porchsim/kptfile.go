package porchsim

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

const (
	kptfileName           = "Kptfile"
	packageContextFile    = "package-context.yaml"
	localConfigAnnotation = "config.kubernetes.io/local-config"
)

// gitLock is where a revision came from, as recorded in a Kptfile's
// upstream and upstreamLock and in status.upstreamLock.
type gitLock struct {
	repo, directory, ref, commit string
}

func (l gitLock) upstreamLock() *porchv1alpha1.UpstreamLock {
	return &porchv1alpha1.UpstreamLock{
		Type: "git",
		Git:  &kptfilev1.GitLock{Repo: l.repo, Directory: l.directory, Ref: l.ref, Commit: l.commit},
	}
}

// fakeCommit is a deterministic stand-in for a git commit SHA.
func fakeCommit(parts ...string) string {
	sum := sha1.Sum([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:])
}

// lastSegment is a package's own name: the last segment of its path.
func lastSegment(pkg string) string {
	return path.Base(pkg)
}

// editYAML applies edit to the parsed document and returns it as YAML;
// comments, key order and unknown fields survive.
func editYAML(content string, edit func(*yaml.RNode) error) (string, error) {
	node, err := yaml.Parse(content)
	if err != nil {
		return "", err
	}
	if node.YNode().Kind != yaml.MappingNode {
		return "", errors.New("not a YAML mapping")
	}
	if err := edit(node); err != nil {
		return "", err
	}
	return node.String()
}

// setString sets a string field, keeping the node (and its comments) when
// the field exists.
func setString(n *yaml.RNode, value string, path ...string) error {
	f, err := n.Pipe(yaml.Lookup(path...))
	if err != nil {
		return err
	}
	if f != nil && f.YNode().Kind == yaml.ScalarNode {
		f.YNode().Value = value
		f.YNode().Tag = yaml.NodeTagString
		return nil
	}
	return n.SetMapField(yaml.NewStringRNode(value), path...)
}

// setName sets metadata.name.
func setName(n *yaml.RNode, name string) error {
	return setString(n, name, "metadata", "name")
}

// minimalKptfile is the Kptfile of a package made from nothing (init, or a
// published revision stored without one).
func minimalKptfile(name, description string) (string, error) {
	return editYAML("apiVersion: kpt.dev/v1\nkind: Kptfile\n", func(n *yaml.RNode) error {
		if err := setName(n, name); err != nil {
			return err
		}
		if err := n.SetAnnotations(map[string]string{localConfigAnnotation: "true"}); err != nil {
			return err
		}
		return setString(n, description, "info", "description")
	})
}

// withKptfile returns a copy of files whose Kptfile has been edited (a
// minimal one is created first when there is none).
func withKptfile(files map[string]string, pkg string, edit func(*yaml.RNode) error) (map[string]string, error) {
	out := copyFiles(files)
	content, ok := out[kptfileName]
	if !ok {
		var err error
		if content, err = minimalKptfile(lastSegment(pkg), pkg+" package"); err != nil {
			return nil, err
		}
	}
	edited, err := editYAML(content, edit)
	if err != nil {
		return nil, fmt.Errorf("edit Kptfile: %w", err)
	}
	out[kptfileName] = edited
	return out, nil
}

// setReadinessGates writes info.readinessGates; Porch keeps them and
// spec.readinessGates in step.
func setReadinessGates(n *yaml.RNode, gates []porchv1alpha1.ReadinessGate) error {
	if len(gates) == 0 {
		info, err := n.Pipe(yaml.Lookup("info"))
		if err != nil || info == nil {
			return err
		}
		_, err = info.Pipe(yaml.Clear("readinessGates"))
		return err
	}
	seq := yaml.NewRNode(&yaml.Node{Kind: yaml.SequenceNode, Tag: yaml.NodeTagSeq})
	for _, g := range gates {
		m := yaml.NewMapRNode(nil)
		if err := m.PipeE(yaml.SetField("conditionType", yaml.NewStringRNode(g.ConditionType))); err != nil {
			return err
		}
		seq.YNode().Content = append(seq.YNode().Content, m.YNode())
	}
	return n.SetMapField(seq, "info", "readinessGates")
}

// readKptfile decodes a Kptfile for reading only (edits go through YAML
// nodes).
func readKptfile(content string) (*kptfilev1.KptFile, error) {
	node, err := yaml.Parse(content)
	if err != nil {
		return nil, err
	}
	if node.YNode().Kind != yaml.MappingNode {
		return nil, errors.New("not a YAML mapping")
	}
	data, err := node.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var kf kptfilev1.KptFile
	if err := json.Unmarshal(data, &kf); err != nil {
		return nil, err
	}
	return &kf, nil
}

// kptfileMirrors are what Porch mirrors from the root Kptfile into the
// PackageRevision.
type kptfileMirrors struct {
	gates      []porchv1alpha1.ReadinessGate
	conditions []porchv1alpha1.Condition
	metadata   *porchv1alpha1.PackageMetadata
}

// kptfileMirror reads what Porch mirrors from the root Kptfile into the
// PackageRevision: info.readinessGates into spec.readinessGates,
// status.conditions into status.conditions, and the Kptfile's own labels
// and annotations into spec.packageMetadata.
func kptfileMirror(files map[string]string) (kptfileMirrors, error) {
	content, ok := files[kptfileName]
	if !ok {
		return kptfileMirrors{}, nil
	}
	kf, err := readKptfile(content)
	if err != nil {
		return kptfileMirrors{}, err
	}
	var m kptfileMirrors
	if kf.Info != nil {
		for _, g := range kf.Info.ReadinessGates {
			m.gates = append(m.gates, porchv1alpha1.ReadinessGate{ConditionType: g.ConditionType})
		}
	}
	if kf.Status != nil {
		for _, c := range kf.Status.Conditions {
			m.conditions = append(m.conditions, porchv1alpha1.Condition{
				Type: c.Type, Status: porchv1alpha1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message,
			})
		}
	}
	if len(kf.Metadata.Labels) > 0 || len(kf.Metadata.Annotations) > 0 {
		m.metadata = &porchv1alpha1.PackageMetadata{Labels: kf.Metadata.Labels, Annotations: kf.Metadata.Annotations}
	}
	return m, nil
}

// copyFiles returns a copy of a package's files (never nil).
func copyFiles(files map[string]string) map[string]string {
	if files == nil {
		return map[string]string{}
	}
	return maps.Clone(files)
}

// mirrorKptfile copies what Porch mirrors from the Kptfile into the
// revision: readiness gates, conditions and the package metadata; an
// unparseable Kptfile leaves the mirrors as they were.
func mirrorKptfile(pr *porchv1alpha1.PackageRevision, files map[string]string) {
	m, err := kptfileMirror(files)
	if err != nil {
		return
	}
	pr.Spec.ReadinessGates = m.gates
	pr.Status.Conditions = m.conditions
	pr.Spec.PackageMetadata = m.metadata
}
