package e2eutil

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ServiceAccountKubeconfig writes to path a kubeconfig that authenticates as
// the ServiceAccount namespace/name with a token from the TokenRequest API,
// valid for expiry, on the cluster that cluster (the admin's configuration)
// reaches. No kubelet runs in the local cluster, so the controller runs as a
// process; with this kubeconfig every request it makes is authorized by the
// ServiceAccount's RBAC from deploy/, as in a pod.
func ServiceAccountKubeconfig(ctx context.Context, kube kubernetes.Interface, cluster *rest.Config, namespace, name string, expiry time.Duration, path string) error {
	token, err := ServiceAccountToken(ctx, kube, namespace, name, expiry)
	if err != nil {
		return err
	}
	if err := clientcmd.WriteToFile(*TokenKubeconfig(cluster, token, namespace), path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

// ServiceAccountToken is a token of the ServiceAccount namespace/name from
// the TokenRequest API, valid for expiry: what a pod of that account
// presents (to the API server, or to the controller's /metrics).
func ServiceAccountToken(ctx context.Context, kube kubernetes.Interface, namespace, name string, expiry time.Duration) (string, error) {
	seconds := int64(expiry / time.Second)
	tr, err := kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request a token for %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, nil
}

// TokenKubeconfig is a kubeconfig for the server and certificate authority
// of cluster, authenticating with token, its default namespace namespace.
func TokenKubeconfig(cluster *rest.Config, token, namespace string) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{
		Server:                   cluster.Host,
		CertificateAuthorityData: cluster.CAData,
		CertificateAuthority:     cluster.CAFile,
	}
	cfg.AuthInfos["token"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "token", Namespace: namespace}
	cfg.CurrentContext = "e2e"
	return cfg
}
