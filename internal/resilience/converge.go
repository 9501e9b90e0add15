package resilience

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
)

// versions maps namespace/name to resourceVersion.
type versions map[string]string

// storeVersions reads what the informer's store holds.
func storeVersions(s cache.Store) versions {
	out := versions{}
	for _, obj := range s.List() {
		if m, err := meta.Accessor(obj); err == nil {
			out[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
		}
	}
	return out
}

// serverVersions lists what the server holds now (a consistent read, not
// the watch cache at "0").
func serverVersions(ctx context.Context, mc metadata.Interface, gvr schema.GroupVersionResource, ns string) (versions, error) {
	list, err := mc.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make(versions, len(list.Items))
	for _, it := range list.Items {
		out[it.Namespace+"/"+it.Name] = it.ResourceVersion
	}
	return out, nil
}

// diff summarises how store differs from server: objects missing, extra and
// stale in the store.
func diff(store, server versions) (missing, extra, stale int) {
	for k, rv := range server {
		switch got, ok := store[k]; {
		case !ok:
			missing++
		case got != rv:
			stale++
		}
	}
	for k := range store {
		if _, ok := server[k]; !ok {
			extra++
		}
	}
	return
}

func describeDiff(store, server versions) string {
	missing, extra, stale := diff(store, server)
	if missing+extra+stale == 0 {
		return "in sync"
	}
	keys := slices.Sorted(maps.Keys(server))
	example := ""
	for _, k := range keys {
		if store[k] != server[k] {
			example = fmt.Sprintf(", e.g. %s store %q server %q", k, store[k], server[k])
			break
		}
	}
	return fmt.Sprintf("%d missing, %d extra, %d stale of %d%s", missing, extra, stale, len(server), example)
}
