package leancache

import (
	"net/url"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestParseScope(t *testing.T) {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	gadgets := schema.GroupVersionResource{Group: "test.cachetune.dev", Version: "v1", Resource: "gadgets"}
	nodes := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	for _, tc := range []struct {
		name       string
		url        string
		resource   schema.GroupVersionResource
		namespaced bool
		watch      bool
		want       scope
		err        string
	}{
		{name: "all namespaces", url: "https://h/api/v1/pods", resource: pods, namespaced: true, want: scope{}},
		{name: "one namespace", url: "https://h/api/v1/namespaces/a/pods", resource: pods, namespaced: true, want: scope{namespace: "a"}},
		{name: "a group, a host path prefix", url: "https://h/prefix/apis/test.cachetune.dev/v1/namespaces/b/gadgets", resource: gadgets, namespaced: true, want: scope{namespace: "b"}},
		{name: "selectors", url: "https://h/api/v1/pods?labelSelector=tier+in+%28web%29%2Cenv%21%3Ddev&fieldSelector=metadata.name%3Dx", resource: pods, namespaced: true,
			want: scope{labelSelector: "tier in (web),env!=dev", fieldSelector: "metadata.name=x"}},
		{name: "watch", url: "https://h/api/v1/nodes?watch=true&allowWatchBookmarks=true&labelSelector=a%3Db", resource: nodes, watch: true, want: scope{labelSelector: "a=b"}},
		{name: "watch without bookmarks", url: "https://h/api/v1/nodes?watch=true", resource: nodes, watch: true, err: "EnableWatchBookmarks=false"},
		{name: "another resource", url: "https://h/api/v1/services", resource: pods, namespaced: true, err: "is not of resource"},
		{name: "another group version", url: "https://h/apis/apps/v1/pods", resource: pods, namespaced: true, err: "is not of resource"},
		{name: "namespace of a cluster-scoped resource", url: "https://h/api/v1/namespaces/a/nodes", resource: nodes, err: "is not of resource"},
		{name: "unknown parameter", url: "https://h/api/v1/pods?limit=5", resource: pods, namespaced: true, err: "limit=5 has no leanstore equivalent"},
		{name: "watch flag on a list", url: "https://h/api/v1/pods?watch=true", resource: pods, namespaced: true, err: "watch=true has no leanstore equivalent"},
		{name: "a selector twice", url: "https://h/api/v1/pods?labelSelector=a&labelSelector=b", resource: pods, namespaced: true, err: "given 2 times"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := url.Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseScope(u, tc.resource, tc.namespaced, tc.watch)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("parseScope(%s) = %+v, %v; want an error containing %q", tc.url, got, err, tc.err)
				}
			case err != nil:
				t.Errorf("parseScope(%s): %v", tc.url, err)
			case got != tc.want:
				t.Errorf("parseScope(%s) = %+v, want %+v", tc.url, got, tc.want)
			}
		})
	}
}
