package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	informers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions"
	"github.com/porch-variants/variant-controller/pkg/porchsim/porchsimtest"
)

func TestDiscoveryListsBothResourcesWithPorchVerbs(t *testing.T) {
	s := startServer(t, newFleet(t), nil)
	dc := discovery.NewDiscoveryClientForConfigOrDie(s.config)
	list, err := dc.ServerResourcesForGroupVersion(porchv1alpha1.SchemeGroupVersion.String())
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	type resource struct {
		Kind       string
		Namespaced bool
		Verbs      []string
	}
	got := map[string]resource{}
	for _, r := range list.APIResources {
		verbs := slices.Clone(r.Verbs)
		slices.Sort(verbs)
		got[r.Name] = resource{r.Kind, r.Namespaced, verbs}
	}
	want := map[string]resource{
		"packagerevisions":          {"PackageRevision", true, []string{"create", "delete", "get", "list", "patch", "update", "watch"}},
		"packagerevisions/approval": {"PackageRevision", true, []string{"get", "patch", "update"}},
		"packagerevisionresources":  {"PackageRevisionResources", true, []string{"get", "list", "patch", "update"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET /apis/porch.kpt.dev/v1alpha1 (-want +got):\n%s", diff)
	}

	groups, err := dc.ServerGroups()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	if !slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool {
		return g.Name == porchv1alpha1.GroupName && g.PreferredVersion.Version == "v1alpha1"
	}) {
		t.Errorf("GET /apis does not offer %s/v1alpha1: %+v", porchv1alpha1.GroupName, groups.Groups)
	}
}

func TestCloneFromPublishedIsServedAndWatched(t *testing.T) {
	s := startServer(t, newFleet(t), nil)
	ctx := context.Background()
	prs := s.client.PorchV1alpha1().PackageRevisions(ns)

	before, err := prs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	w, err := prs.Watch(ctx, metav1.ListOptions{ResourceVersion: before.ResourceVersion})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	// Porch replays every revision as ADDED when a watch starts.
	for range before.Items {
		nextEvent(t, w)
	}

	created := s.cloneDraft(t, "app", "v1")
	if created.Name != "deploy.app.v1" || created.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecycleDraft {
		t.Fatalf("create answered %s (%s), want the Draft deploy.app.v1", created.Name, created.Spec.Lifecycle)
	}
	if lock := created.Status.UpstreamLock; lock == nil || lock.Git == nil || lock.Git.Ref != "app/v1" {
		t.Errorf("status.upstreamLock = %+v, want a git lock on app/v1", lock)
	}

	ev := nextEvent(t, w)
	if ev.Type != watch.Added || ev.Object.(*porchv1alpha1.PackageRevision).Name != "deploy.app.v1" {
		t.Errorf("watch saw %s %T, want ADDED deploy.app.v1", ev.Type, ev.Object)
	}

	got, err := prs.Get(ctx, "deploy.app.v1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.UID != created.UID || got.ResourceVersion != created.ResourceVersion {
		t.Errorf("get answered uid %s rv %s, want the created %s rv %s", got.UID, got.ResourceVersion, created.UID, created.ResourceVersion)
	}

	cases := map[string]struct {
		selector string
		want     []string
	}{
		"drafts only":             {"spec.lifecycle=Draft", []string{"deploy.app.v1"}},
		"one repository":          {"spec.repository=blueprints", []string{"blueprints.app.main", upstreamV1}},
		"package and workspace":   {"spec.packageName=app,spec.workspaceName=v1", []string{upstreamV1, "deploy.app.v1"}},
		"published from revision": {"spec.revision=1", []string{upstreamV1}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, err := prs.List(ctx, metav1.ListOptions{FieldSelector: tc.selector})
			if err != nil {
				t.Fatalf("list %s: %v", tc.selector, err)
			}
			var names []string
			for _, pr := range l.Items {
				names = append(names, pr.Name)
			}
			slices.Sort(names)
			want := slices.Sorted(slices.Values(tc.want))
			if diff := cmp.Diff(want, names); diff != "" {
				t.Errorf("list with %s (-want +got):\n%s", tc.selector, diff)
			}
		})
	}

	deployment := s.sim.PackageRevisions(ns)
	if !slices.ContainsFunc(deployment, func(pr porchv1alpha1.PackageRevision) bool { return pr.Name == "deploy.app.v1" }) {
		t.Errorf("the Sim does not hold the draft created through the server")
	}
}

func TestUpdatesReachTheSim(t *testing.T) {
	s := startServer(t, newFleet(t), nil)
	ctx := context.Background()
	prs := s.client.PorchV1alpha1().PackageRevisions(ns)
	draft := s.cloneDraft(t, "app", "v1")

	// Resources: a Draft's files are stored and rendered.
	prrs := s.client.PorchV1alpha1().PackageRevisionResources(ns)
	prr, err := prrs.Get(ctx, draft.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get resources: %v", err)
	}
	if _, ok := prr.Spec.Resources["package-context.yaml"]; !ok {
		t.Errorf("a clone into a deployment repository has no package-context.yaml: %v", slices.Sorted(maps.Keys(prr.Spec.Resources)))
	}
	prr.Spec.Resources["extra.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
	updated, err := prrs.Update(ctx, prr, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update resources: %v", err)
	}
	if updated.Status.RenderStatus.Err != "" {
		t.Errorf("render failed: %s", updated.Status.RenderStatus.Err)
	}
	files, err := s.sim.Resources(ns, draft.Name)
	if err != nil {
		t.Fatalf("sim resources: %v", err)
	}
	if files["extra.yaml"] != prr.Spec.Resources["extra.yaml"] {
		t.Errorf("the Sim holds extra.yaml = %q, want the updated file", files["extra.yaml"])
	}

	// Lifecycle: Draft -> Proposed by update.
	cur, err := prs.Get(ctx, draft.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	cur.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleProposed
	proposed, err := prs.Update(ctx, cur, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("propose: %v", err)
	}
	if proposed.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecycleProposed {
		t.Errorf("lifecycle after update = %s, want Proposed", proposed.Spec.Lifecycle)
	}
	if pr, _ := s.sim.PackageRevision(ns, draft.Name); pr.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecycleProposed {
		t.Errorf("the Sim holds lifecycle %s, want Proposed", pr.Spec.Lifecycle)
	}

	// Patch: metadata of a Published revision may change.
	patched, err := prs.Patch(ctx, upstreamV1, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"team":"platform"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patch labels of a Published revision: %v", err)
	}
	if patched.Labels["team"] != "platform" || patched.Labels[porchv1alpha1.LatestPackageRevisionLabel] != "true" {
		t.Errorf("labels after patch = %v, want team=platform beside the latest-revision label", patched.Labels)
	}
	patched, err = prs.Patch(ctx, upstreamV1, types.JSONPatchType,
		[]byte(`[{"op":"replace","path":"/spec/lifecycle","value":"DeletionProposed"}]`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("propose deletion by JSON patch: %v", err)
	}
	if patched.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecycleDeletionProposed {
		t.Errorf("lifecycle after patch = %s, want DeletionProposed", patched.Spec.Lifecycle)
	}
	// deploy.app.v1 was cloned from it: Porch refuses (403) to delete an
	// upstream, even a DeletionProposed one.
	err = prs.Delete(ctx, upstreamV1, metav1.DeleteOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "cannot delete package revision, it is referenced as upstream by: deploy.app.v1") {
		t.Errorf("delete a DeletionProposed upstream of a clone: got %v, want 403 naming deploy.app.v1", err)
	}
	if err := prs.Delete(ctx, "deploy.app.v1", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete the clone: %v", err)
	}
	if err := prs.Delete(ctx, upstreamV1, metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete a DeletionProposed revision nothing was cloned from: %v", err)
	}
	if _, err := prs.Get(ctx, upstreamV1, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}
}

// TestPorchRulesSurfaceAsHTTPStatus proves that the Sim's refusals reach
// the client with their code, reason and message.
func TestPorchRulesSurfaceAsHTTPStatus(t *testing.T) {
	// Porch ignores delete preconditions: a delete with a stale one
	// deletes (measured against real Porch). Checked first, on its own
	// draft, because it changes what the cases below see.
	{
		s := startServer(t, newFleet(t), nil)
		prs := s.client.PorchV1alpha1().PackageRevisions(ns)
		draft := s.cloneDraft(t, "app", "v1")
		ctx := context.Background()
		if err := prs.Delete(ctx, draft.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr.To("1"), UID: ptr.To(types.UID("wrong"))}}); err != nil {
			t.Errorf("delete with stale preconditions: %v, want it done (Porch ignores them)", err)
		}
		if _, err := prs.Get(ctx, draft.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get after a delete with stale preconditions: %v, want NotFound", err)
		}
	}
	s := startServer(t, newFleet(t), nil)
	ctx := context.Background()
	prs := s.client.PorchV1alpha1().PackageRevisions(ns)
	draft := s.cloneDraft(t, "app", "v1")
	// createClone is a request creating repo/pkg in workspace ws, a clone of
	// the blueprint.
	createClone := func(repo, pkg, ws string, opts metav1.CreateOptions) func() error {
		return func() error {
			return porchsimtest.ErrOf(prs.Create(ctx, newDraft(repo, pkg, ws, cloneTask(upstreamV1)), opts))
		}
	}

	cases := map[string]struct {
		do          func() error
		wantCode    int32
		wantReason  metav1.StatusReason
		wantMessage string
	}{
		"deleting a Published revision is refused": {
			do:          func() error { return prs.Delete(ctx, upstreamV1, metav1.DeleteOptions{}) },
			wantCode:    http.StatusForbidden,
			wantReason:  metav1.StatusReasonForbidden,
			wantMessage: "published PackageRevisions must be proposed for deletion by setting spec.lifecycle to 'DeletionProposed' prior to deletion",
		},
		"an update with a stale resourceVersion conflicts": {
			do: func() error {
				stale := draft.DeepCopy()
				stale.Labels = map[string]string{"a": "b"}
				if _, err := prs.Update(ctx, stale, metav1.UpdateOptions{}); err != nil {
					return err
				}
				stale.Labels = map[string]string{"c": "d"}
				_, err := prs.Update(ctx, stale, metav1.UpdateOptions{})
				return err
			},
			wantCode:    http.StatusInternalServerError,
			wantReason:  metav1.StatusReasonInternalError,
			wantMessage: `Operation cannot be fulfilled on packagerevisions.porch.kpt.dev "deploy.app.v1": the object has been modified`,
		},

		"a second revision with the same workspace is refused": {
			do:          createClone("deploy", "app", "v1", metav1.CreateOptions{}),
			wantCode:    http.StatusInternalServerError,
			wantReason:  metav1.StatusReasonInternalError,
			wantMessage: "package revision workspaceNames must be unique; package revision with name app in repo deploy with workspaceName v1 already exists",
		},
		"a clone into an existing package is refused": {
			do:          createClone("deploy", "app", "v2", metav1.CreateOptions{}),
			wantCode:    http.StatusInternalServerError,
			wantMessage: "make subsequent revisions using `copy`",
		},
		"a revision in an unknown repository is refused": {
			do:         createClone("nowhere", "app", "v1", metav1.CreateOptions{}),
			wantCode:   http.StatusNotFound,
			wantReason: metav1.StatusReasonNotFound,
		},
		"the spec of a Published revision cannot change": {
			do: func() error {
				pr, err := prs.Get(ctx, upstreamV1, metav1.GetOptions{})
				if err != nil {
					return err
				}
				pr.Spec.PackageName = "other"
				_, err = prs.Update(ctx, pr, metav1.UpdateOptions{})
				return err
			},
			wantCode:   http.StatusUnprocessableEntity,
			wantReason: metav1.StatusReasonInvalid,
		},
		"a field Porch does not index cannot select": {
			do: func() error {
				return porchsimtest.ErrOf(prs.List(ctx, metav1.ListOptions{FieldSelector: "status.deployment=true"}))
			},
			wantCode:    http.StatusBadRequest,
			wantReason:  metav1.StatusReasonBadRequest,
			wantMessage: "field label not supported: status.deployment",
		},
		"resources of a Published revision cannot change": {
			do: func() error {
				prr, err := s.client.PorchV1alpha1().PackageRevisionResources(ns).Get(ctx, upstreamV1, metav1.GetOptions{})
				if err != nil {
					return err
				}
				prr.Spec.Resources["new.yaml"] = "a: b\n"
				_, err = s.client.PorchV1alpha1().PackageRevisionResources(ns).Update(ctx, prr, metav1.UpdateOptions{})
				return err
			},
			wantCode:    http.StatusInternalServerError,
			wantMessage: "package must be Draft",
		},
		"an unknown revision is not found": {
			do:         func() error { return porchsimtest.ErrOf(prs.Get(ctx, "deploy.app.nope", metav1.GetOptions{})) },
			wantCode:   http.StatusNotFound,
			wantReason: metav1.StatusReasonNotFound,
		},
		"a dry run is refused rather than done": {
			do:          createClone("deploy", "other", "v1", metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}),
			wantCode:    http.StatusBadRequest,
			wantMessage: "dry run is not supported",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.do()
			var status apierrors.APIStatus
			if !errors.As(err, &status) {
				t.Fatalf("got %v, want an API error with code %d", err, tc.wantCode)
			}
			st := status.Status()
			if st.Code != tc.wantCode {
				t.Errorf("code = %d (%s), want %d", st.Code, st.Message, tc.wantCode)
			}
			if tc.wantReason != "" && st.Reason != tc.wantReason {
				t.Errorf("reason = %s, want %s", st.Reason, tc.wantReason)
			}
			if !strings.Contains(st.Message, tc.wantMessage) {
				t.Errorf("message = %q, want it to contain %q", st.Message, tc.wantMessage)
			}
		})
	}
	if _, err := s.sim.PackageRevision(ns, "deploy.other.v1"); err == nil {
		t.Errorf("the dry run created deploy.other.v1 in the Sim")
	}
}

func TestTablesHavePorchColumns(t *testing.T) {
	s := startServer(t, newFleet(t), nil)
	s.cloneDraft(t, "app", "v1")

	cases := map[string]struct {
		path        string
		wantColumns []string
		wantRows    [][]any
	}{
		"packagerevisions": {
			path:        "/apis/porch.kpt.dev/v1alpha1/namespaces/ns/packagerevisions",
			wantColumns: []string{"Name", "Package", "WorkspaceName", "Revision", "Latest", "Lifecycle", "Repository"},
			wantRows: [][]any{
				{"blueprints.app.main", "app", "main", float64(-1), false, "Published", "blueprints"},
				{upstreamV1, "app", "v1", float64(1), true, "Published", "blueprints"},
				{"deploy.app.v1", "app", "v1", float64(0), false, "Draft", "deploy"},
			},
		},
		"one packagerevision": {
			path:        "/apis/porch.kpt.dev/v1alpha1/namespaces/ns/packagerevisions/deploy.app.v1",
			wantColumns: []string{"Name", "Package", "WorkspaceName", "Revision", "Latest", "Lifecycle", "Repository"},
			wantRows:    [][]any{{"deploy.app.v1", "app", "v1", float64(0), false, "Draft", "deploy"}},
		},
		"packagerevisionresources": {
			path:        "/apis/porch.kpt.dev/v1alpha1/namespaces/ns/packagerevisionresources",
			wantColumns: []string{"Name", "Package", "WorkspaceName", "Revision", "Repository", "Files"},
			wantRows: [][]any{
				{"blueprints.app.main", "app", "main", float64(-1), "blueprints", float64(2)},
				{upstreamV1, "app", "v1", float64(1), "blueprints", float64(2)},
				{"deploy.app.v1", "app", "v1", float64(0), "deploy", float64(3)},
			},
		},
	}
	hc, err := rest.HTTPClientFor(s.config)
	if err != nil {
		t.Fatalf("http client: %v", err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, s.config.Host+tc.path, nil)
			req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatalf("GET %s: %v", tc.path, err)
			}
			defer resp.Body.Close()
			var table metav1.Table
			if err := json.NewDecoder(resp.Body).Decode(&table); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if table.Kind != "Table" {
				t.Fatalf("GET %s answered kind %q (status %d), want a Table", tc.path, table.Kind, resp.StatusCode)
			}
			var columns []string
			for _, c := range table.ColumnDefinitions {
				columns = append(columns, c.Name)
			}
			if diff := cmp.Diff(tc.wantColumns, columns); diff != "" {
				t.Errorf("columns (-want +got):\n%s", diff)
			}
			var rows [][]any
			for _, r := range table.Rows {
				rows = append(rows, r.Cells)
			}
			if diff := cmp.Diff(tc.wantRows, rows); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

// TestInformersWork runs a generated informer against the server, as the
// controllers would: it lists (or asks for a watch list), watches and sees
// changes made through the server and directly in the Sim.
func TestInformersWork(t *testing.T) {
	s := startServer(t, newFleet(t), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory := informers.NewSharedInformerFactoryWithOptions(s.client, 0, informers.WithNamespace(ns))
	lister := factory.Porch().V1alpha1().PackageRevisions().Lister()
	factory.Start(ctx.Done())
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), factory.Porch().V1alpha1().PackageRevisions().Informer().HasSynced) {
		t.Fatalf("informer did not sync")
	}
	if _, err := lister.PackageRevisions(ns).Get(upstreamV1); err != nil {
		t.Errorf("the synced informer lacks %s: %v", upstreamV1, err)
	}

	s.cloneDraft(t, "app", "v1")
	if err := s.sim.Publish(ns, "deploy.app.v1"); err != nil {
		t.Fatalf("publish: %v", err)
	}
	waitFor(t, func() bool {
		pr, err := lister.PackageRevisions(ns).Get("deploy.app.v1")
		return err == nil && pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecyclePublished && pr.Spec.Revision == 1
	}, "the informer to see deploy.app.v1 published")
}

// TestWatchListEndsInitialEventsWithABookmark proves the watch-list
// protocol client-go's reflectors use.
func TestWatchListEndsInitialEventsWithABookmark(t *testing.T) {
	s := startServer(t, newFleet(t), nil)
	ctx := context.Background()
	prs := s.client.PorchV1alpha1().PackageRevisions(ns)
	w, err := prs.Watch(ctx, metav1.ListOptions{
		SendInitialEvents:    ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
		FieldSelector:        fields.OneTermEqualSelector("spec.repository", "deploy").String() + ",spec.lifecycle=Draft",
	})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	ev := nextEvent(t, w)
	if ev.Type != watch.Bookmark || ev.Object.(*porchv1alpha1.PackageRevision).Annotations[metav1.InitialEventsAnnotationKey] != "true" {
		t.Fatalf("first event %s %+v, want the end-of-initial-events BOOKMARK (nothing matches yet)", ev.Type, ev.Object)
	}
	s.cloneDraft(t, "app", "v1")
	ev = nextEvent(t, w)
	if ev.Type != watch.Added || ev.Object.(*porchv1alpha1.PackageRevision).Name != "deploy.app.v1" {
		t.Errorf("event %s %T, want ADDED deploy.app.v1", ev.Type, ev.Object)
	}

	w2, err := prs.Watch(ctx, metav1.ListOptions{
		SendInitialEvents:    ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w2.Stop()
	var initial []string
	for {
		ev := nextEvent(t, w2)
		pr := ev.Object.(*porchv1alpha1.PackageRevision)
		if ev.Type == watch.Bookmark {
			break
		}
		initial = append(initial, string(ev.Type)+" "+pr.Name)
	}
	if diff := cmp.Diff([]string{"ADDED blueprints.app.main", "ADDED " + upstreamV1, "ADDED deploy.app.v1"}, initial); diff != "" {
		t.Errorf("initial events (-want +got):\n%s", diff)
	}
}

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatalf("no watch event within 10s")
	}
	return watch.Event{}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDeleteWaitsForFinalizers proves the delete answers: a revision with a
// finalizer stays, marked for deletion, until the finalizer is removed.
func TestDeleteWaitsForFinalizers(t *testing.T) {
	s := startServer(t, newFleet(t), nil)
	ctx := context.Background()
	prs := s.client.PorchV1alpha1().PackageRevisions(ns)
	pr := newDraft("deploy", "app", "v1", cloneTask(upstreamV1))
	pr.Finalizers = []string{"example.com/hold"}
	if _, err := prs.Create(ctx, pr, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}

	// The typed client drops the answer of a delete; ask for it raw.
	result := s.client.PorchV1alpha1().RESTClient().Delete().Namespace(ns).Resource("packagerevisions").
		Name("deploy.app.v1").Body(&metav1.DeleteOptions{}).Do(ctx)
	if err := result.Error(); err != nil {
		t.Fatalf("delete: %v", err)
	}
	var code int
	result.StatusCode(&code)
	marked := &porchv1alpha1.PackageRevision{}
	if err := result.Into(marked); err != nil {
		t.Fatalf("decode the delete's answer: %v", err)
	}
	if code != http.StatusOK || marked.DeletionTimestamp == nil {
		t.Errorf("delete answered %d with deletionTimestamp %v; want 200 and the revision marked for deletion", code, marked.DeletionTimestamp)
	}

	marked.Finalizers = nil
	if _, err := prs.Update(ctx, marked, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("remove the finalizer: %v", err)
	}
	if _, err := prs.Get(ctx, "deploy.app.v1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after the last finalizer went: %v, want NotFound", err)
	}
}

// TestServerSideApplyOfMetadata proves the OpenAPI models are complete
// enough for server-side apply, which kubectl apply --server-side uses.
func TestServerSideApplyOfMetadata(t *testing.T) {
	s := startServer(t, newFleet(t), nil)
	patch := []byte(`{"apiVersion":"porch.kpt.dev/v1alpha1","kind":"PackageRevision","metadata":{"name":"` + upstreamV1 + `","annotations":{"owner":"platform"}}}`)
	got, err := s.client.PorchV1alpha1().PackageRevisions(ns).Patch(context.Background(), upstreamV1, types.ApplyPatchType, patch,
		metav1.PatchOptions{FieldManager: "test", Force: ptr.To(true)})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if got.Annotations["owner"] != "platform" || got.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecyclePublished {
		t.Errorf("after apply: annotations %v, lifecycle %s; want owner=platform on the unchanged Published revision", got.Annotations, got.Spec.Lifecycle)
	}
}
