package apiserver

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// The REST storages of this package hold no state and apply no rule: each
// request becomes one or two requests to the Sim's clientset, and the Sim's
// answer, object or API error, is returned as it is. Only the protocol is
// adapted (request options, the read-modify-write of an update, the initial
// events of a watch); what Porch allows is the Sim's to decide.

// maxUpdateAttempts bounds the retries of an update whose object changed
// between the storage's read and its write. Only a change computed from
// what was read (a patch) is retried; an update that carries its own
// resourceVersion meets the Sim's conflict as the client sent it.
const maxUpdateAttempts = 5

// object is what the storages serve: a typed API object with metadata.
type object interface {
	runtime.Object
	metav1.Object
}

// served is the Sim's answer as a storage returns it: the object, or the
// error and no object (never a typed nil in the interface).
func served[T runtime.Object](o T, err error) (runtime.Object, error) {
	if err != nil {
		return nil, err
	}
	return o, nil
}

// namespaceOf is the namespace of a request ("" for a request across all
// namespaces).
func namespaceOf(ctx context.Context) string {
	return genericapirequest.NamespaceValue(ctx)
}

// listOptions turns the server's list options back into the wire form the
// clientset takes.
func listOptions(in *metainternalversion.ListOptions) (metav1.ListOptions, error) {
	var out metav1.ListOptions
	if in == nil {
		return out, nil
	}
	if err := metainternalversion.Convert_internalversion_ListOptions_To_v1_ListOptions(in, &out, nil); err != nil {
		return out, apierrors.NewBadRequest(fmt.Sprintf("list options: %v", err))
	}
	return out, nil
}

// refuseDryRun answers a dry run: the Sim has no way to try a write without
// making it, and doing the write would be worse than saying no.
func refuseDryRun(dryRun []string) error {
	if len(dryRun) > 0 {
		return apierrors.NewBadRequest("dry run is not supported by porchsim-apiserver")
	}
	return nil
}

// updateThrough serves an update or a patch: it reads the current object,
// lets objInfo compute the new one from it (the request body for an update,
// the patched object for a patch) and writes that. When the write conflicts
// only because the object moved after the read, the change is computed again
// from the new state, as the API server's storage does.
func updateThrough[T object](ctx context.Context, objInfo rest.UpdatedObjectInfo, validate rest.ValidateObjectUpdateFunc,
	get func() (T, error), update func(T) (T, error)) (runtime.Object, error) {
	for attempt := 1; ; attempt++ {
		cur, err := get()
		if err != nil {
			return nil, err
		}
		obj, err := objInfo.UpdatedObject(ctx, cur)
		if err != nil {
			return nil, err
		}
		in, ok := obj.(T)
		if !ok {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("expected a %T, got %T", cur, obj))
		}
		if validate != nil {
			if err := validate(ctx, in, cur); err != nil {
				return nil, err
			}
		}
		out, err := update(in)
		if apierrors.IsConflict(err) && in.GetResourceVersion() == cur.GetResourceVersion() && attempt < maxUpdateAttempts {
			continue
		}
		if err != nil {
			return nil, err
		}
		return out, nil
	}
}
