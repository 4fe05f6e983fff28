package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

// The set's status lists, per wave, the variants that failed or are
// skipped and, until the wave has finished, those that carry the change,
// at most MaxVariantStatesListed per wave; every other variant's state
// follows from its wave's phase. The variants' wave labels say which wave each is
// in: rollout status lists the set's PackageVariants (one request) and
// puts the two together.

// variantRow is one line of the variant table.
type variantRow struct {
	name, wave, state, detail string
	order                     int
}

// setVariants are the PackageVariants the set controls, read live.
func (o *rolloutStatusOptions) setVariants(ctx context.Context, pvs *configv1alpha2.PackageVariantSet) ([]configv1alpha1.PackageVariant, error) {
	list, err := o.clients.config.ConfigV1alpha1().PackageVariants(pvs.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{configv1alpha2.SetLabel: string(pvs.UID)}).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("listing the PackageVariants of %s (rerun with --variants=false to show the waves only): %w", o.describe(), err)
	}
	return list.Items, nil
}

// variantRows are the set's variants, each with its wave and its state in
// the rollout, in wave order then by name.
func variantRows(pvs *configv1alpha2.PackageVariantSet, variants []configv1alpha1.PackageVariant) []variantRow {
	st := pvs.Status.Rollout
	healthy := "published"
	if pvs.Spec.Rollout.Health != nil {
		healthy = "healthy"
	}
	rows := map[string]variantRow{}
	waveOrder := map[string]int{}
	for i, ws := range st.Waves {
		waveOrder[ws.Name] = i
		for _, v := range ws.VariantStates {
			rows[v.Name] = variantRow{name: v.Name, wave: ws.Name, order: i, state: listedState(v.State, healthy), detail: v.Detail}
		}
	}
	for _, pv := range variants {
		if _, listed := rows[pv.Name]; listed {
			continue
		}
		wave := pv.Labels[configv1alpha2.WaveLabel]
		i, ok := waveOrder[wave]
		if !ok {
			rows[pv.Name] = variantRow{name: pv.Name, wave: "-", order: len(st.Waves), state: "in no wave", detail: "held on what it carries; no wave's selectors match it"}
			continue
		}
		state, detail := unlistedState(st.Waves[i], healthy)
		rows[pv.Name] = variantRow{name: pv.Name, wave: wave, order: i, state: state, detail: detail}
	}
	out := make([]variantRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b variantRow) int {
		if a.order != b.order {
			return a.order - b.order
		}
		return strings.Compare(a.name, b.name)
	})
	return out
}

// listedState is how a state the set lists reads.
func listedState(s configv1alpha2.VariantRolloutState, healthy string) string {
	switch s {
	case configv1alpha2.VariantFinished:
		return healthy
	case configv1alpha2.VariantWaitingForApproval:
		return "waiting for approval"
	default:
		return strings.ToLower(string(s))
	}
}

// unlistedState is the state of a variant the set does not list, from its
// wave.
func unlistedState(ws configv1alpha2.WaveStatus, healthy string) (string, string) {
	switch ws.Phase {
	case configv1alpha2.WaveFinished:
		return healthy, ""
	case configv1alpha2.WaveSoaking:
		return "soaking", ""
	}
	if ws.VariantStatesNotListed > 0 {
		return "not listed", fmt.Sprintf("the set lists %d of the wave's %d variants", len(ws.VariantStates), ws.Variants)
	}
	switch ws.Phase {
	case configv1alpha2.WaveWaitingForApproval:
		return "pending", "its wave waits for approval"
	case configv1alpha2.WaveProgressing, configv1alpha2.WaveHalted:
		return "pending", "not opened yet"
	default:
		return "pending", "its wave has not started"
	}
}

// printVariants prints the variant table (no padding at the ends of
// lines).
func printVariants(w io.Writer, rows []variantRow) {
	if len(rows) == 0 {
		return
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIANT\tWAVE\tSTATE\tDETAIL")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.name, r.wave, r.state, r.detail)
	}
	_ = tw.Flush()
	for line := range strings.Lines(b.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
}
