package kptengine

import (
	"sync"

	"sigs.k8s.io/kustomize/kyaml/openapi"
)

// schemaOnce parses kyaml's built-in OpenAPI schema before the first engine
// call of the process. kyaml fills its global schema on first use and reads
// parts of it without its lock (openapi.IsNamespaceScoped), so the first
// two engine calls of a process, side by side (porchsim serves requests
// concurrently), race on it.
var schemaOnce sync.Once

func schemaReady() {
	schemaOnce.Do(func() { openapi.Schema() })
}
