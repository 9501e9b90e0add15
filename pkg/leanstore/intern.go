package leanstore

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Interning replaces each string in a cached object with one canonical copy shared
// by every object of the informer that holds the same text. Objects of one
// workload repeat most of their strings (label keys and values, image names, env
// names and values, mount paths), and a decoder allocates each of them anew for
// every object. Strings are immutable in Go, so sharing them is invisible to
// readers: no in-place change of a cached object can reach another object
// through an interned string. Canonical copies are held weakly by the
// informer's table (sharetable.go): they are freed when no object holds them.
//
// Strings that are unique to one object (its name, uid and resourceVersion, and
// container IDs) are left alone: interning them would only cost a lookup.

var (
	objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()
	// maxInternLen bounds the strings worth a table lookup: long strings (certificates,
	// last-applied annotations, config files) are rarely repeated byte for byte.
	maxInternLen = 4096
)

// uniqueFields are string fields whose values are unique to one object.
var uniqueFields = map[string]bool{"ContainerID": true}

// uniqueMetaFields are ObjectMeta fields whose values are unique to one object.
var uniqueMetaFields = map[string]bool{"Name": true, "UID": true, "ResourceVersion": true, "SelfLink": true}

// uniqueMetaKeys are the same fields in an unstructured object's metadata.
var uniqueMetaKeys = map[string]bool{"name": true, "uid": true, "resourceVersion": true, "selfLink": true}
