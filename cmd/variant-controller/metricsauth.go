package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// metricsPath is the one path the metrics server serves.
const metricsPath = "/metrics"

// metricsReaderRole is the ClusterRole deploy/rbac ships for scrapers: get on
// the non-resource URL /metrics.
const metricsReaderRole = "variant-controller-metrics-reader"

// How long the API server's answers about a scraper are kept. A scraper
// asks every 15 to 60 seconds: with a minute, its token and permission are
// reviewed about once a minute, not on every scrape, and a binding removed
// stops working within a minute. A refusal is kept for less, so a binding
// just made works within seconds.
const (
	tokenReviewTTL    = time.Minute
	accessAllowedTTL  = time.Minute
	accessDeniedTTL   = 10 * time.Second
	accessReviewLimit = 10 * time.Second // one TokenReview, as the scrape waits
)

// reviewBackoff retries a TokenReview or SubjectAccessReview the API server
// answered with a transient error (500, 429, a timeout, a reset
// connection): 4 tries within about 1.5 seconds, shorter than a scrape's
// timeout.
var reviewBackoff = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 4}

// delegatedAuth lets a request through only when the Kubernetes API server
// says so: its bearer token is checked with a TokenReview, then the user's
// permission to get the URL's path with a SubjectAccessReview (a
// non-resource URL, as RBAC's nonResourceURLs name it), as the API server
// and controller-runtime's secure metrics filter do. Both answers are
// cached (tokenReviewTTL, accessAllowedTTL, accessDeniedTTL).
type delegatedAuth struct {
	authn authenticator.Request
	authz authorizer.Authorizer
}

// newDelegatedAuth asks kube's API server; the controller's own identity
// needs create on tokenreviews and subjectaccessreviews.
func newDelegatedAuth(kube kubernetes.Interface) (*delegatedAuth, error) {
	backoff := reviewBackoff
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		TokenAccessReviewClient:  kube.AuthenticationV1(),
		TokenAccessReviewTimeout: accessReviewLimit,
		WebhookRetryBackoff:      &backoff,
		CacheTTL:                 tokenReviewTTL,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("configure delegated authentication of /metrics: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: kube.AuthorizationV1(),
		AllowCacheTTL:             accessAllowedTTL,
		DenyCacheTTL:              accessDeniedTTL,
		WebhookRetryBackoff:       &backoff,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("configure delegated authorization of /metrics: %w", err)
	}
	return &delegatedAuth{authn: authn, authz: authz}, nil
}

// wrap answers 401 to a request without an accepted bearer token, 404 to
// any path but /metrics, 405 to anything but GET and HEAD, 403 to a user
// who may not get /metrics, and 500 when the API server could not be
// asked; it passes the rest to next.
// Each answer says what is missing and how to grant it.
func (a *delegatedAuth) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logger := klog.FromContext(r.Context())
		resp, ok, err := a.authn.AuthenticateRequest(r)
		switch {
		case err != nil && reviewFailed(err):
			// The API server's words stay in the log: the client is not
			// authenticated.
			logger.Error(err, "Could not review the bearer token of a /metrics request", "remote", r.RemoteAddr)
			http.Error(w, "internal error: could not check the bearer token with the Kubernetes API server (TokenReview; the controller's log says why): "+
				reviewHint(err, "create on tokenreviews.authentication.k8s.io"), http.StatusInternalServerError)
			return
		case !ok:
			w.Header().Set("WWW-Authenticate", `Bearer realm="variant-controller"`)
			if !hasBearerToken(r) {
				http.Error(w, "unauthorized: no bearer token; "+r.URL.Path+" needs the header \"Authorization: Bearer <token>\" with the token of a Kubernetes user allowed to get it (a ServiceAccount bound to the ClusterRole "+metricsReaderRole+")", http.StatusUnauthorized)
				return
			}
			// The API server's reasons stay in the log: they are for the
			// operator, not for whoever sent the token.
			logger.V(2).Info("Refused a /metrics request: token not accepted", "remote", r.RemoteAddr, "reason", err)
			http.Error(w, "unauthorized: the Kubernetes API server did not accept the bearer token (expired, revoked or not a Kubernetes token); send a current token of a ServiceAccount bound to the ClusterRole "+metricsReaderRole+" (for example from kubectl create token)", http.StatusUnauthorized)
			return
		}
		if r.URL.Path != metricsPath {
			http.Error(w, "not found: this server serves "+metricsPath+" only", http.StatusNotFound)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed: "+r.URL.Path+" answers GET and HEAD, not "+r.Method, http.StatusMethodNotAllowed)
			return
		}
		attrs := authorizer.AttributesRecord{User: resp.User, Verb: "get", Path: r.URL.Path, ResourceRequest: false}
		decision, reason, err := a.authz.Authorize(r.Context(), attrs)
		if err != nil {
			logger.Error(err, "Could not review the permission of a /metrics request", "user", resp.User.GetName(), "remote", r.RemoteAddr)
			http.Error(w, "internal error: could not check the permission with the Kubernetes API server (SubjectAccessReview): "+err.Error()+
				"; "+reviewHint(err, "create on subjectaccessreviews.authorization.k8s.io"), http.StatusInternalServerError)
			return
		}
		if decision != authorizer.DecisionAllow {
			msg := fmt.Sprintf("forbidden: user %q may not get %s: it needs verb \"get\" on the non-resource URL %q; bind it to the ClusterRole %s (a ClusterRoleBinding)",
				resp.User.GetName(), r.URL.Path, r.URL.Path, metricsReaderRole)
			if reason != "" {
				msg += " (the API server says: " + reason + ")"
			}
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hasBearerToken reports whether r carries a bearer token at all.
func hasBearerToken(r *http.Request) bool {
	scheme, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	return strings.EqualFold(scheme, "bearer") && strings.TrimSpace(token) != ""
}

// reviewFailed reports whether err says that a review could not be made (the
// API server refused it, failed or could not be reached) rather than that
// the token was not accepted: the API server's answer, or a transport error,
// somewhere in the authenticators' aggregate.
func reviewFailed(err error) bool {
	errs := []error{err}
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		errs = agg.Errors()
	}
	for _, e := range errs {
		var status apierrors.APIStatus
		var urlErr *url.Error
		if errors.As(e, &status) || errors.As(e, &urlErr) {
			return true
		}
	}
	return false
}

// reviewHint says what to do about a review that failed: grant the
// controller its permission when the API server refused it, otherwise look
// at the connection.
func reviewHint(err error, permission string) string {
	errs := []error{err}
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		errs = agg.Errors()
	}
	for _, e := range errs {
		if apierrors.IsForbidden(e) || apierrors.IsUnauthorized(e) {
			return "the controller's ServiceAccount needs " + permission + " (deploy/rbac/cluster_role.yaml)"
		}
	}
	return "check that the controller reaches its API server; try again"
}
