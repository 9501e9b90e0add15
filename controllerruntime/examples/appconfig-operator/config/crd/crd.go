// Package crd holds the operator's CustomResourceDefinitions (bases/, as
// kubebuilder lays them out), embedded so that the operator's --local mode
// can install them wherever it runs from.
package crd

import "embed"

// Bases are the CRD manifests, one YAML file each.
//
//go:embed bases/*.yaml
var Bases embed.FS
