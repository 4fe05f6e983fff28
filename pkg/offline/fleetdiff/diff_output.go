package fleetdiff

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// WriteJSON prints the diff as one JSON document, for bots.
func (d *Diff) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}

// WriteYAML prints the diff as one YAML document, for bots.
func (d *Diff) WriteYAML(w io.Writer) error {
	b, err := yaml.Marshal(d)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// SummaryLine counts what the diff holds, in one line.
func (d *Diff) SummaryLine() string {
	s := d.Summary
	return fmt.Sprintf("PackageVariantSets: %d added, %d changed, %d removed; PackageVariants: %d added, %d changed, %d removed; "+
		"PackageRevisions: %d created (%d clone, %d edit, %d upgrade), %d replaced, %d deleted, %d proposed for deletion, %d changed",
		s.SetsAdded, s.SetsChanged, s.SetsRemoved, s.VariantsAdded, s.VariantsChanged, s.VariantsRemoved,
		s.RevisionsCreated, s.Clones, s.Edits, s.Upgrades, s.RevisionsReplaced, s.RevisionsDeleted, s.ProposedForDeletion, s.RevisionsChanged)
}

// actionMark is the first column of a line: + added/created, - removed or
// deleted, ~ changed or replaced, ! proposed for deletion.
func actionMark(action string) string {
	switch action {
	case DiffAdded, RevisionCreated:
		return "+"
	case DiffRemoved, RevisionDeleted:
		return "-"
	case RevisionProposedForDeletion:
		return "!"
	default:
		return "~"
	}
}

// WriteText prints the diff for people: sets, then each variant with its
// revisions and their file changes, then the summary line.
func (d *Diff) WriteText(w io.Writer) error {
	return d.writeText(w, true)
}

// WriteTextBrief is WriteText without the files' diffs: each changed
// revision says its files changed and against what.
func (d *Diff) WriteTextBrief(w io.Writer) error {
	return d.writeText(w, false)
}

func (d *Diff) writeText(w io.Writer, files bool) error {
	var b strings.Builder
	for _, s := range d.Sets {
		writeObject(&b, s, "")
	}
	for _, v := range d.Variants {
		owner := ""
		if v.Set != "" {
			owner = " (set " + v.Set + ")"
		}
		if v.Action == "" {
			fmt.Fprintf(&b, "  PackageVariant %s/%s%s: unchanged; its package revisions change\n", v.Namespace, v.Name, owner)
		} else {
			writeObject(&b, v.ObjectDiff, owner)
		}
		if v.Ready != nil && !hasCondition(v.Conditions, "Ready") {
			fmt.Fprintf(&b, "    Ready: %s (unchanged)\n", describeCondition(v.Ready))
		}
		for _, r := range v.Revisions {
			writeRevision(&b, r, files)
		}
	}
	if len(d.OtherRevisions) > 0 {
		fmt.Fprintln(&b, "  PackageRevisions no variant owns:")
		for _, r := range d.OtherRevisions {
			writeRevision(&b, r, files)
		}
	}
	for _, p := range d.Previews {
		p.writeText(&b, files)
	}
	if d.NotSettled != "" {
		fmt.Fprintf(&b, "warning: the controllers did not settle (%s); the difference shows how far they got\n", d.NotSettled)
	}
	if d.Empty() {
		fmt.Fprintln(&b, "No difference: the controllers would change nothing.")
	}
	fmt.Fprintln(&b, d.SummaryLine())
	_, err := io.WriteString(w, b.String())
	return err
}

func writeObject(b *strings.Builder, o ObjectDiff, owner string) {
	what := o.Action
	if len(o.Changed) > 0 {
		what += " (" + strings.Join(o.Changed, ", ") + ")"
	}
	fmt.Fprintf(b, "%s %s %s/%s%s: %s\n", actionMark(o.Action), o.Kind, o.Namespace, o.Name, owner, what)
	if o.SpecDiff != "" {
		writeIndented(b, "      ", o.SpecDiff)
	}
	for _, c := range o.Conditions {
		fmt.Fprintf(b, "    %s: %s -> %s\n", c.Type, describeCondition(c.Before), describeCondition(c.After))
	}
	if r := o.Rollout; r != nil {
		fmt.Fprintf(b, "    rollout %s (upstream revision %d), wave by wave:\n", r.ID, r.UpstreamRevision)
		for _, w := range r.Waves {
			fmt.Fprintf(b, "      %s: %s; %d variants, %d with the change, %d published, %d failed\n",
				w.Name, w.Phase, w.Variants, w.Updated, w.Finished, w.Failed)
		}
	}
}

func hasCondition(cs []ConditionChange, t string) bool {
	return slices.ContainsFunc(cs, func(c ConditionChange) bool { return c.Type == t })
}

func describeCondition(c *Condition) string {
	if c == nil {
		return "(none)"
	}
	s := c.Status + " " + c.Reason
	if c.Message != "" {
		s += " " + fmt.Sprintf("%q", c.Message)
	}
	return s
}

// writeRevision prints a revision's change, its files' diff when files is
// set.
func writeRevision(b *strings.Builder, r RevisionDiff, files bool) {
	var what string
	switch r.Action {
	case RevisionCreated, RevisionReplaced:
		what = fmt.Sprintf("%s %s (%s)", r.Action, r.Lifecycle, r.Task)
		if r.Replaces != "" {
			what += ", in place of " + r.Replaces
		}
	case RevisionDeleted:
		what = fmt.Sprintf("deleted (was %s)", lifecycleOf(r))
	case RevisionProposedForDeletion:
		what = fmt.Sprintf("proposed for deletion (%s %d, a person approves the deletion)", r.LifecycleBefore, r.Revision)
	default:
		what = fmt.Sprintf("changed (%s)", strings.Join(r.Changed, ", "))
		if r.LifecycleBefore != "" {
			what += fmt.Sprintf(", %s -> %s", r.LifecycleBefore, r.Lifecycle)
		}
	}
	fmt.Fprintf(b, "    %s PackageRevision %s/%s: %s\n", actionMark(r.Action), r.Namespace, r.Name, what)
	for _, g := range r.Blocking {
		fmt.Fprintf(b, "      blocks publishing: %s: %s\n", g.Type, describeCondition(&g.Condition))
	}
	switch {
	case r.Diff == "":
	case !files:
		fmt.Fprintf(b, "      files changed against %s; diff left out (--brief)\n", r.ComparedWith)
	default:
		if r.ComparedWith != "" {
			fmt.Fprintf(b, "      files against %s:\n", r.ComparedWith)
		}
		writeIndented(b, "      ", r.Diff)
	}
}

func lifecycleOf(r RevisionDiff) string {
	if r.Revision > 0 {
		return fmt.Sprintf("%s %d", r.Lifecycle, r.Revision)
	}
	return r.Lifecycle
}

func writeIndented(b *strings.Builder, indent, text string) {
	for _, l := range strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n") {
		b.WriteString(indent)
		b.WriteString(strings.TrimSuffix(l, "\n"))
		b.WriteByte('\n')
	}
}
