package kptengine

import (
	"bytes"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	kptapi "github.com/kptdev/kpt/pkg/api/kptfile/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Kptfile status written by a render, as kpt v1.0.0-beta.62.1 names it.
const (
	conditionTypeRendered = "Rendered"
	reasonRenderSuccess   = "RenderSuccess"
	// reasonNotRunOffline: offline (SkipNotBuiltin), some functions of the
	// pipeline did not run; not Porch's, which runs them all or fails.
	reasonNotRunOffline = "NotRunOffline"
	reasonRenderFailed  = "RenderFailed"
)

// kptfileDoc is the layout in which kpt v1.0.0-beta.62.1 (the kpt Porch is
// built with) decodes and re-marshals a Kptfile: the fields of beta.61's
// KptFile in the same order, with a status that also holds renderStatus.
// Marshalling this struct with wide sequences gives the bytes Porch stores.
type kptfileDoc struct {
	yaml.ResourceMeta `yaml:",inline"`
	Upstream          *kptapi.Upstream     `yaml:"upstream,omitempty"`
	UpstreamLock      *kptapi.UpstreamLock `yaml:"upstreamLock,omitempty"`
	Info              *kptapi.PackageInfo  `yaml:"info,omitempty"`
	Pipeline          *kptapi.Pipeline     `yaml:"pipeline,omitempty"`
	Inventory         *kptapi.Inventory    `yaml:"inventory,omitempty"`
	Status            *kptfileStatus       `yaml:"status,omitempty"`
}

// kptfileStatus is a Kptfile's status with beta.62.1's renderStatus.
type kptfileStatus struct {
	Conditions   []kptapi.Condition `yaml:"conditions,omitempty"`
	RenderStatus *renderStatus      `yaml:"renderStatus,omitempty"`
}

// renderStatus is what the last render of the package did, function by
// function (Kptfile status.renderStatus).
type renderStatus struct {
	MutationSteps   []stepResult `yaml:"mutationSteps,omitempty"`
	ValidationSteps []stepResult `yaml:"validationSteps,omitempty"`
	ErrorSummary    string       `yaml:"errorSummary,omitempty"`
}

// stepResult is the outcome of one function of the pipeline. ExitCode is
// always written, even when 0, as Porch does.
type stepResult struct {
	Name           string       `yaml:"name,omitempty"`
	Image          string       `yaml:"image,omitempty"`
	ExecPath       string       `yaml:"exec,omitempty"`
	ExecutionError string       `yaml:"executionError,omitempty"`
	Stderr         string       `yaml:"stderr,omitempty"`
	ExitCode       int          `yaml:"exitCode"`
	Results        []resultItem `yaml:"results,omitempty"`
	ErrorResults   []resultItem `yaml:"errorResults,omitempty"`
}

// displayName is how a step is named in renderStatus.errorSummary.
func (s stepResult) displayName() string {
	switch {
	case s.Name != "":
		return s.Name
	case s.Image != "":
		return s.Image
	default:
		return s.ExecPath
	}
}

// resultItem is one structured result of a function, reduced to the fields
// a Kptfile records.
type resultItem struct {
	Message     string       `yaml:"message,omitempty"`
	Severity    string       `yaml:"severity,omitempty"`
	ResourceRef *resourceRef `yaml:"resourceRef,omitempty"`
	Field       *fieldRef    `yaml:"field,omitempty"`
	File        *fileRef     `yaml:"file,omitempty"`
}

type resourceRef struct {
	APIVersion string `yaml:"apiVersion,omitempty"`
	Kind       string `yaml:"kind,omitempty"`
	Name       string `yaml:"name,omitempty"`
	Namespace  string `yaml:"namespace,omitempty"`
}

type fieldRef struct {
	Path          string `yaml:"path,omitempty"`
	CurrentValue  string `yaml:"currentValue,omitempty"`
	ProposedValue string `yaml:"proposedValue,omitempty"`
}

type fileRef struct {
	Path  string `yaml:"path,omitempty"`
	Index int    `yaml:"index,omitempty"`
}

// decodeKptfile parses a Kptfile the way kpt does: unknown fields are an
// error, so a Kptfile kpt would refuse is refused here too.
func decodeKptfile(content string) (*kptfileDoc, error) {
	node, err := yaml.Parse(content)
	if err != nil {
		return nil, fmt.Errorf("parse Kptfile: %w", err)
	}
	meta, err := node.GetMeta()
	if err != nil {
		return nil, fmt.Errorf("parse Kptfile: %w", err)
	}
	gvk := kptapi.KptFileGVK()
	if meta.APIVersion != gvk.GroupVersion().String() || meta.Kind != gvk.Kind {
		return nil, fmt.Errorf("parse Kptfile: want apiVersion %s and kind %s, got %q and %q",
			gvk.GroupVersion(), gvk.Kind, meta.APIVersion, meta.Kind)
	}
	doc := &kptfileDoc{}
	d := yaml.NewDecoder(strings.NewReader(content))
	d.KnownFields(true)
	if err := d.Decode(doc); err != nil {
		return nil, fmt.Errorf("parse Kptfile: %w", err)
	}
	return doc, nil
}

// encodeKptfile marshals a Kptfile as kpt does when it rewrites one:
// fields in struct order, sequences indented under their key, comments and
// unknown fields gone.
func encodeKptfile(doc *kptfileDoc) (string, error) {
	b, err := yaml.MarshalWithOptions(doc, &yaml.EncoderOptions{SeqIndent: yaml.WideSequenceStyle})
	if err != nil {
		return "", fmt.Errorf("marshal Kptfile: %w", err)
	}
	return string(b), nil
}

// setRenderOutcome records a render in a Kptfile as beta.62.1 does: any
// Rendered condition is replaced by the new one (appended last) and
// renderStatus is replaced, or removed when no function ran.
func (doc *kptfileDoc) setRenderOutcome(cond kptapi.Condition, rs *renderStatus) {
	if doc.Status == nil {
		doc.Status = &kptfileStatus{}
	}
	kept := doc.Status.Conditions[:0:0]
	for _, c := range doc.Status.Conditions {
		if c.Type != conditionTypeRendered {
			kept = append(kept, c)
		}
	}
	doc.Status.Conditions = append(kept, cond)
	doc.Status.RenderStatus = rs
}

// withoutRenderStatus returns the Kptfile without status.renderStatus (and
// without a status left empty by that), and the render status taken out, so
// that kpt beta.61, which does not know the field, can read the Kptfile.
// Content that is not a Kptfile with a render status is returned as it is:
// whatever is wrong with it is for kpt to report.
func withoutRenderStatus(content string) (string, *renderStatus) {
	node, err := yaml.Parse(content)
	if err != nil {
		return content, nil
	}
	status := node.Field("status")
	if status == nil || status.Value == nil || status.Value.Field("renderStatus") == nil {
		return content, nil
	}
	var rs renderStatus
	rsNode := status.Value.Field("renderStatus").Value
	if err := rsNode.YNode().Decode(&rs); err != nil {
		return content, nil
	}
	if _, err := status.Value.Pipe(yaml.Clear("renderStatus")); err != nil {
		return content, nil
	}
	if fields, err := status.Value.Fields(); err == nil && len(fields) == 0 {
		if _, err := node.Pipe(yaml.Clear("status")); err != nil {
			return content, nil
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoderWithOptions(&buf, &yaml.EncoderOptions{SeqIndent: yaml.SequenceIndentStyle(yaml.DeriveSeqIndentStyle(content))})
	if err := enc.Encode(node.Document()); err != nil {
		return content, nil
	}
	return buf.String(), &rs
}

// withRenderStatus puts a render status taken out by withoutRenderStatus
// back into a Kptfile kpt has rewritten (as beta.62.1 would have kept it).
func withRenderStatus(content string, rs *renderStatus) (string, error) {
	if rs == nil {
		return content, nil
	}
	doc, err := decodeKptfile(content)
	if err != nil {
		return "", err
	}
	if doc.Status == nil {
		doc.Status = &kptfileStatus{}
	}
	doc.Status.RenderStatus = rs
	return encodeKptfile(doc)
}

// restoreRenderStatusNode puts the render status of original back into
// rendered, a Kptfile kpt rewrote while the status was set aside.
func restoreRenderStatusNode(rendered, original string) string {
	orig, err := yaml.Parse(original)
	if err != nil {
		return rendered
	}
	rs, err := orig.Pipe(yaml.Lookup("status", "renderStatus"))
	if err != nil || rs == nil {
		return rendered
	}
	node, err := yaml.Parse(rendered)
	if err != nil {
		return rendered
	}
	if err := node.PipeE(yaml.LookupCreate(yaml.MappingNode, "status"), yaml.SetField("renderStatus", rs)); err != nil {
		return rendered
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoderWithOptions(&buf, &yaml.EncoderOptions{SeqIndent: yaml.SequenceIndentStyle(yaml.DeriveSeqIndentStyle(rendered))})
	if err := enc.Encode(node.Document()); err != nil {
		return rendered
	}
	return buf.String()
}

// isKptfile tells whether a package file is a Kptfile (of the package or of
// a subpackage).
func isKptfile(p string) bool {
	return path.Base(p) == kptapi.KptFileName
}

// stripRenderStatuses returns a copy of the files with the render status
// taken out of every Kptfile, and the statuses taken out by file.
func stripRenderStatuses(files map[string]string) (map[string]string, map[string]*renderStatus) {
	out := make(map[string]string, len(files))
	taken := map[string]*renderStatus{}
	for p, content := range files {
		if isKptfile(p) {
			if stripped, rs := withoutRenderStatus(content); rs != nil {
				out[p] = stripped
				taken[p] = rs
				continue
			}
		}
		out[p] = content
	}
	return out, taken
}

// sortedPaths returns the paths of the files in lexical order, so that
// everything done file by file is done in the same order every time.
func sortedPaths(files map[string]string) []string {
	return slices.Sorted(maps.Keys(files))
}
