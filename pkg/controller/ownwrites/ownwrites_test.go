package ownwrites

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

func cm(rv, data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: "u", ResourceVersion: rv}, Data: map[string]string{"v": data}}
}

// TestLatest: the own write wins while the cache shows the version it
// replaced; once the cache shows anything else, the cache wins and the
// entry is dropped.
func TestLatest(t *testing.T) {
	var o Objects[*corev1.ConfigMap]
	if got := o.Latest(cm("1", "cached")); got.Data["v"] != "cached" {
		t.Errorf("nothing recorded: got %v, want the cached object", got.Data)
	}
	o.Record("1", cm("2", "written"))
	if got := o.Latest(cm("1", "cached")); got.ResourceVersion != "2" {
		t.Errorf("cache behind the write: got rv %s, want the write's 2", got.ResourceVersion)
	}
	if got := o.Latest(cm("2", "cached")); got.Data["v"] != "cached" {
		t.Errorf("cache caught up: got %v, want the cached object", got.Data)
	}
	// Caught up once: the entry is gone even if an old version shows again.
	if got := o.Latest(cm("1", "old")); got.Data["v"] != "old" {
		t.Errorf("after the cache caught up: got %v, want the cached object", got.Data)
	}
	o.Record("3", cm("4", "written"))
	if got := o.Latest(cm("5", "someone else")); got.ResourceVersion != "5" {
		t.Errorf("cache past the write: got rv %s, want 5", got.ResourceVersion)
	}
	o.Record("6", cm("7", "written"))
	o.Forget("u")
	if got := o.Latest(cm("6", "cached")); got.ResourceVersion != "6" {
		t.Errorf("after Forget: got rv %s, want the cached 6", got.ResourceVersion)
	}
}

// TestLatestCacheSeveralWritesBehind: writes made one onto the other's
// answer form a chain; a cache showing any version the chain replaced gets
// the newest write (up to maxChain writes behind). A write made onto a
// version someone else wrote starts a new chain.
func TestLatestCacheSeveralWritesBehind(t *testing.T) {
	var o Objects[*corev1.ConfigMap]
	o.Record("1", cm("2", "written"))
	o.Record("2", cm("3", "written again"))
	for _, rv := range []string{"1", "2"} {
		if got := o.Latest(cm(rv, "cached")); got.ResourceVersion != "3" {
			t.Errorf("cache at %s, two writes made since: got rv %s, want the newest write's 3", rv, got.ResourceVersion)
		}
	}
	if got := o.Latest(cm("3", "cached")); got.Data["v"] != "cached" {
		t.Errorf("cache caught up: got %v, want the cached object", got.Data)
	}

	o.Record("1", cm("2", "written"))
	o.Record("5", cm("6", "onto someone else's write"))
	if got := o.Latest(cm("1", "cached")); got.ResourceVersion != "1" {
		t.Errorf("a version replaced before someone else wrote: got rv %s, want the cached 1", got.ResourceVersion)
	}

	for v := 1; v <= maxChain+2; v++ {
		o.Record(strconv.Itoa(v), cm(strconv.Itoa(v+1), "written"))
	}
	want := strconv.Itoa(maxChain + 3)
	if got := o.Latest(cm("3", "cached")); got.ResourceVersion != want {
		t.Errorf("cache %d writes behind: got rv %s, want the newest %s", maxChain, got.ResourceVersion, want)
	}
	if got := o.Latest(cm("2", "cached")); got.ResourceVersion != "2" {
		t.Errorf("cache more than %d writes behind: got rv %s, want the cached 2", maxChain, got.ResourceVersion)
	}
}

// TestGet: the object is the newest known state of what the lister has; a
// missing object is gone (nil, no error); any other lister error is
// returned, naming the object; the context's logger names the object.
func TestGet(t *testing.T) {
	var o Objects[*corev1.ConfigMap]
	o.Record("1", cm("2", "written"))
	key := cache.ObjectName{Namespace: "ns", Name: "c"}
	var logged []string
	logger := funcr.New(func(_, args string) { logged = append(logged, args) }, funcr.Options{Verbosity: 4})
	ctx := klog.NewContext(context.Background(), logger)
	cases := map[string]struct {
		cached  *corev1.ConfigMap
		listErr error
		wantRV  string // "": no object
		wantErr string
		gone    bool // logged as gone
	}{
		"CacheBehind": {cached: cm("1", "cached"), wantRV: "2"},
		"Gone":        {listErr: apierrors.NewNotFound(corev1.Resource("configmaps"), "c"), gone: true},
		"ListerFails": {listErr: errors.New("boom"), wantErr: "get ConfigMap ns/c: boom"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			logged = nil
			syncCtx, got, err := o.Get(ctx, "ConfigMap", key, func(name string) (*corev1.ConfigMap, error) {
				if name != "c" {
					t.Errorf("lister asked for %q, want c", name)
				}
				return tc.cached, tc.listErr
			})
			var gotRV, gotErr string
			if got != nil {
				gotRV = got.ResourceVersion
			}
			if err != nil {
				gotErr = err.Error()
			}
			if gotRV != tc.wantRV || gotErr != tc.wantErr {
				t.Errorf("got rv %q, error %q; want rv %q, error %q", gotRV, gotErr, tc.wantRV, tc.wantErr)
			}
			klog.FromContext(syncCtx).Info("sync")
			want := []string{`"level"=0 "msg"="sync" "configMap"="ns/c"`}
			if tc.gone {
				want = append([]string{`"level"=4 "msg"="ConfigMap is gone" "configMap"="ns/c"`}, want...)
			}
			if diff := cmp.Diff(want, logged); diff != "" {
				t.Errorf("logs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOwn: an event bringing the version the controller's last write
// returned is its echo; the version it replaced, a later one, or one of an
// object nothing was recorded for is not.
func TestOwn(t *testing.T) {
	var o Objects[*corev1.ConfigMap]
	if o.Own(cm("1", "cached")) {
		t.Error("nothing recorded: an event is no echo")
	}
	o.Record("1", cm("2", "written"))
	for rv, want := range map[string]bool{"1": false, "2": true, "3": false} {
		if got := o.Own(cm(rv, "")); got != want {
			t.Errorf("after a write returning version 2, version %s is an echo: %t, want %t", rv, got, want)
		}
	}
	o.Forget("u")
	if o.Own(cm("2", "")) {
		t.Error("after Forget: an event is no echo")
	}
}
