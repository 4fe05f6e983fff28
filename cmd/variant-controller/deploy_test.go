package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// readManifest decodes deploy/<name> strictly into obj: a field misspelt in
// the manifest fails here rather than being dropped by the API server.
func readManifest(t *testing.T, name string, obj any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		t.Fatalf("deploy/%s: %v", name, err)
	}
}

// portOf is the port of a listen address (":8443", "127.0.0.1:8081").
func portOf(t *testing.T, flag, addr string) int32 {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%s=%q: %v", flag, addr, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("%s=%q: %v", flag, addr, err)
	}
	return int32(n)
}

// semverTag is a release tag: v1.2.3, v1.2.3-rc.1.
var semverTag = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// TestDeploymentManifest holds deploy/ to what the binary does: the
// container's arguments are flags it accepts, a graceful shutdown (the
// shutdown grace period, then the Lease release bounded by releaseTimeout)
// fits in terminationGracePeriodSeconds, the ports the flags serve on are
// the container's, the NetworkPolicy's (nothing else) and the scrape
// annotations', the PodDisruptionBudget and the topology spread select the
// pods and keep one replica, and the image's tag is a release, set in
// kustomization.yaml only.
func TestDeploymentManifest(t *testing.T) {
	var d appsv1.Deployment
	readManifest(t, "manager/deployment.yaml", &d)
	pod := d.Spec.Template
	podLabels := labels.Set(pod.Labels)
	selects := func(what string, sel *metav1.LabelSelector) {
		t.Helper()
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil || s.Empty() || !s.Matches(podLabels) {
			t.Errorf("%s's selector %v does not select the controller's pods (%v): %v", what, sel, podLabels, err)
		}
	}
	i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == "manager" })
	if i < 0 {
		t.Fatal("deploy/manager/deployment.yaml has no container named manager")
	}
	c := pod.Spec.Containers[i]

	var o options
	fs := pflag.NewFlagSet("variant-controller", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.addFlags(fs)
	if err := fs.Parse(c.Args); err != nil {
		t.Fatalf("the container's arguments %q: %v", c.Args, err)
	}
	if err := o.validate(); err != nil {
		t.Fatalf("the container's arguments %q: %v", c.Args, err)
	}

	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 || !o.leaderElect {
		t.Errorf("replicas %v, leader election %v; want two replicas electing a leader", d.Spec.Replicas, o.leaderElect)
	}
	grace := time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	if need := o.shutdownDeadline + releaseTimeout; need > grace {
		t.Errorf("--shutdown-grace-period %s + the Lease release (releaseTimeout %s) = %s, longer than terminationGracePeriodSeconds %s: the kubelet kills the process before it releases the Lease",
			o.shutdownDeadline, releaseTimeout, need, grace)
	}

	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	metricsPort, healthPort := portOf(t, "--metrics-bind-address", o.metricsAddr), portOf(t, "--health-probe-bind-address", o.healthAddr)
	if ports["metrics"] != metricsPort || ports["health"] != healthPort {
		t.Errorf("container ports %v; the flags serve metrics on %d and health on %d", ports, metricsPort, healthPort)
	}
	for _, probe := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Port.String() != "health" || probe.HTTPGet.Scheme == corev1.URISchemeHTTPS {
			t.Errorf("probe %+v: want plain HTTP on the health port", probe)
		}
	}
	wantScheme := "http"
	if o.metricsSecure {
		wantScheme = "https"
	}
	if a := pod.Annotations; a["prometheus.io/port"] != fmt.Sprint(metricsPort) || a["prometheus.io/scheme"] != wantScheme {
		t.Errorf("scrape annotations %v; want port %d, scheme %s", a, metricsPort, wantScheme)
	}

	var np networkingv1.NetworkPolicy
	readManifest(t, "manager/network_policy.yaml", &np)
	selects("the NetworkPolicy", &np.Spec.PodSelector)
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(np.Spec.Ingress) != 1 {
		t.Fatalf("NetworkPolicy: policy types %v, %d ingress rules; want Ingress and one rule", np.Spec.PolicyTypes, len(np.Spec.Ingress))
	}
	var allowed []int32
	for _, p := range np.Spec.Ingress[0].Ports {
		allowed = append(allowed, p.Port.IntVal)
	}
	slices.Sort(allowed)
	if want := []int32{min(metricsPort, healthPort), max(metricsPort, healthPort)}; !slices.Equal(allowed, want) {
		t.Errorf("the NetworkPolicy admits ports %v, want exactly the metrics and health ports %v", allowed, want)
	}

	var pdb policyv1.PodDisruptionBudget
	readManifest(t, "manager/pod_disruption_budget.yaml", &pdb)
	selects("the PodDisruptionBudget", pdb.Spec.Selector)
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget minAvailable %v, want 1 of the 2 replicas", pdb.Spec.MinAvailable)
	}

	if n := len(pod.Spec.TopologySpreadConstraints); n != 1 {
		t.Fatalf("%d topology spread constraints, want one over nodes", n)
	}
	spread := pod.Spec.TopologySpreadConstraints[0]
	selects("the topology spread constraint", spread.LabelSelector)
	if spread.TopologyKey != corev1.LabelHostname || spread.WhenUnsatisfiable != corev1.ScheduleAnyway || spread.MaxSkew != 1 {
		t.Errorf("topology spread %+v; want maxSkew 1 over %s, ScheduleAnyway", spread, corev1.LabelHostname)
	}

	var k struct {
		Resources []string `json:"resources"`
		Images    []struct {
			Name    string `json:"name"`
			NewName string `json:"newName"`
			NewTag  string `json:"newTag"`
			Digest  string `json:"digest"`
		} `json:"images"`
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	readManifest(t, "kustomization.yaml", &k)
	for _, want := range []string{"manager/deployment.yaml", "manager/network_policy.yaml", "manager/pod_disruption_budget.yaml", "rbac/metrics_reader_role.yaml"} {
		if !slices.Contains(k.Resources, want) {
			t.Errorf("deploy/kustomization.yaml does not install %s", want)
		}
	}
	if len(k.Images) != 1 || k.Images[0].Name != c.Image {
		t.Fatalf("deploy/kustomization.yaml's images %+v; want one entry naming the container's image %q", k.Images, c.Image)
	}
	if img := k.Images[0]; !semverTag.MatchString(img.NewTag) && img.Digest == "" {
		t.Errorf("the image is pinned to %q; want a release tag (vX.Y.Z) or a digest, never latest", img.NewTag)
	}
	if name := c.Image[strings.LastIndex(c.Image, "/")+1:]; strings.ContainsAny(name, ":@") {
		t.Errorf("the Deployment's image %q carries a tag or digest; set it only in deploy/kustomization.yaml", c.Image)
	}
}
