package faults

import (
	"net/http"
	"strings"
)

// Verb is what a request does, in the API server's terms. Watches are told
// apart by their query: a watch that asks for the initial events
// (sendInitialEvents=true) is a streaming list, WatchList.
type Verb string

// The verbs a Match can select.
const (
	List      Verb = "list"
	Watch     Verb = "watch"
	WatchList Verb = "watchlist"
	Get       Verb = "get"
	Create    Verb = "create"
	Update    Verb = "update"
	Patch     Verb = "patch"
	Delete    Verb = "delete"
	// Other is every request that is not for a resource (discovery, /version,
	// /healthz, OpenAPI) or whose method names no verb above.
	Other Verb = "other"
)

// streaming reports whether responses to v are watch streams.
func (v Verb) streaming() bool { return v == Watch || v == WatchList }

// request is what the proxy knows about a request when it picks a rule.
type request struct {
	Resource  string // plural resource, with "/subresource" when there is one
	Namespace string
	Name      string
	Verb      Verb
	// ResourceVersion is the resourceVersion query parameter, "" when absent.
	ResourceVersion string
	// UserAgent is the User-Agent header.
	UserAgent string
}

// describe parses the path and query of a Kubernetes API request:
//
//	/api/v1[/watch][/namespaces/{ns}]/{resource}[/{name}[/{subresource}]]
//	/apis/{group}/{version}[/watch][/namespaces/{ns}]/{resource}[/{name}[/{subresource}]]
//
// It is a small stand-in for the API server's RequestInfoFactory, which lives in
// k8s.io/apiserver: a dependency too heavy for a library module.
func describe(r *http.Request) request {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return request{Verb: Other, UserAgent: r.UserAgent()}
	}
	legacyWatch := false
	if parts[0] == "watch" {
		legacyWatch = true
		parts = parts[1:]
	}
	var req request
	// "namespaces/{ns}/{resource}..." scopes a resource to a namespace;
	// "namespaces" and "namespaces/{name}[/{sub}]" address namespaces themselves.
	if len(parts) >= 3 && parts[0] == "namespaces" && parts[2] != "finalize" && parts[2] != "status" {
		req.Namespace = parts[1]
		parts = parts[2:]
	}
	if len(parts) == 0 || parts[0] == "" {
		return request{Verb: Other, UserAgent: r.UserAgent()}
	}
	req.Resource = parts[0]
	if len(parts) >= 2 {
		req.Name = parts[1]
	}
	if req.Resource == "namespaces" && req.Name != "" {
		req.Namespace = req.Name
	}
	if len(parts) >= 3 {
		req.Resource += "/" + parts[2]
	}

	q := r.URL.Query()
	req.ResourceVersion = q.Get("resourceVersion")
	req.UserAgent = r.UserAgent()
	isWatch := legacyWatch || q.Get("watch") == "true" || q.Get("watch") == "1"
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case isWatch && q.Get("sendInitialEvents") == "true":
			req.Verb = WatchList
		case isWatch:
			req.Verb = Watch
		case req.Name == "":
			req.Verb = List
		default:
			req.Verb = Get
		}
	case http.MethodPost:
		req.Verb = Create
	case http.MethodPut:
		req.Verb = Update
	case http.MethodPatch:
		req.Verb = Patch
	case http.MethodDelete:
		req.Verb = Delete
	default:
		req.Verb = Other
	}
	return req
}
