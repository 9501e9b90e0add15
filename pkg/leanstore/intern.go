package leanstore

import (
	"reflect"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Interning replaces each string in a cached object with one canonical copy shared
// by every object that holds the same text. Objects of one workload repeat most of
// their strings (label keys and values, image names, env names and values, mount
// paths), and a decoder allocates each of them anew for every object. Strings are
// immutable in Go, so sharing them is invisible to readers. Canonical copies come
// from the unique package: they are freed when no object holds them any more.
//
// Strings that are unique to one object (its name, uid and resourceVersion, and
// container IDs) are left alone: interning them would only add a table entry.

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

func intern(s string) string {
	if s == "" || len(s) > maxInternLen {
		return s
	}
	return unique.Make(s).Value()
}

// internStrings interns the strings of obj in place. obj is a pointer to a typed
// object, an *unstructured.Unstructured or a *metav1.PartialObjectMetadata.
func internStrings(obj interface{}) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		internMap(o.Object, true)
	case *unstructured.UnstructuredList:
		for i := range o.Items {
			internMap(o.Items[i].Object, true)
		}
	default:
		v := reflect.ValueOf(obj)
		if v.Kind() == reflect.Pointer && !v.IsNil() {
			internValue(v.Elem(), false)
		}
	}
}

// internValue walks an addressable value.
func internValue(v reflect.Value, inMeta bool) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			if s := v.String(); s != "" {
				v.SetString(intern(s))
			}
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			internValue(v.Elem(), false)
		}
	case reflect.Struct:
		t := v.Type()
		meta := t == objectMetaType
		for i := range v.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			if (meta && uniqueMetaFields[f.Name]) || uniqueFields[f.Name] {
				continue
			}
			internValue(v.Field(i), meta)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // []byte: Secret data, raw bytes
			return
		}
		for i := range v.Len() {
			internValue(v.Index(i), false)
		}
	case reflect.Array:
		for i := range v.Len() {
			internValue(v.Index(i), false)
		}
	case reflect.Map:
		internMapValue(v)
	}
}

// internMapValue interns keys and values of a map. Assigning to an existing key
// replaces the stored key with the one given (Go updates string keys on
// assignment), so keys are interned without rebuilding the map.
func internMapValue(m reflect.Value) {
	if m.Len() == 0 {
		return
	}
	kt, vt := m.Type().Key(), m.Type().Elem()
	keyIsString := kt.Kind() == reflect.String
	switch {
	case keyIsString && vt.Kind() == reflect.String:
		iter := m.MapRange()
		for iter.Next() {
			k := reflect.ValueOf(intern(iter.Key().String())).Convert(kt)
			m.SetMapIndex(k, reflect.ValueOf(intern(iter.Value().String())).Convert(vt))
		}
	case keyIsString:
		iter := m.MapRange()
		for iter.Next() {
			k := reflect.ValueOf(intern(iter.Key().String())).Convert(kt)
			val := reflect.New(vt).Elem()
			val.Set(iter.Value())
			internValue(val, false)
			m.SetMapIndex(k, val)
		}
	}
}

// internMap interns an unstructured object's keys and string values.
// Directly under "metadata", name, uid and resourceVersion are unique and skipped.
func internMap(m map[string]interface{}, top bool) {
	for k, v := range m {
		switch val := v.(type) {
		case string:
			m[intern(k)] = intern(val)
		case map[string]interface{}:
			if top && k == "metadata" {
				internMeta(val)
			} else {
				internMap(val, false)
			}
			m[intern(k)] = val
		case []interface{}:
			internSlice(val)
			m[intern(k)] = val
		default:
			m[intern(k)] = v
		}
	}
}

func internMeta(m map[string]interface{}) {
	for k, v := range m {
		switch val := v.(type) {
		case string:
			if k == "name" || k == "uid" || k == "resourceVersion" || k == "selfLink" {
				continue
			}
			m[intern(k)] = intern(val)
		case map[string]interface{}:
			internMap(val, false)
		case []interface{}:
			internSlice(val)
		}
	}
}

func internSlice(s []interface{}) {
	for i, v := range s {
		switch val := v.(type) {
		case string:
			s[i] = intern(val)
		case map[string]interface{}:
			internMap(val, false)
		case []interface{}:
			internSlice(val)
		}
	}
}
