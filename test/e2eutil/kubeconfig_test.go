package e2eutil

import (
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestTokenKubeconfig: the kubeconfig reaches the admin's server with its
// certificate authority, and authenticates with the token alone (none of the
// admin's credentials leak into it).
func TestTokenKubeconfig(t *testing.T) {
	admin := &rest.Config{
		Host:            "https://127.0.0.1:26443",
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), CertData: []byte("admin-cert"), KeyData: []byte("admin-key")},
	}
	loader := clientcmd.NewDefaultClientConfig(*TokenKubeconfig(admin, "the-token", "variant-controller-system"), nil)
	got, err := loader.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if got.Host != admin.Host {
		t.Errorf("Host = %q, want %q", got.Host, admin.Host)
	}
	if string(got.CAData) != "ca" {
		t.Errorf("CAData = %q, want the admin's", got.CAData)
	}
	if got.BearerToken != "the-token" {
		t.Errorf("BearerToken = %q, want the-token", got.BearerToken)
	}
	if len(got.CertData) != 0 || len(got.KeyData) != 0 || got.CertFile != "" || got.KeyFile != "" {
		t.Errorf("the kubeconfig carries a client certificate: %+v", got.TLSClientConfig)
	}
	if ns, _, err := loader.Namespace(); err != nil || ns != "variant-controller-system" {
		t.Errorf("namespace %q (%v), want variant-controller-system", ns, err)
	}
}
