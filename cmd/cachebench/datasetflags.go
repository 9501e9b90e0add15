package main

import (
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// datasetFlags registers on fs the dataset flags that run and seed share.
// Their defaults are dataset.Standard's with the generator's own filled in
// (dataset.Spec.WithDefaults), so the help and the generator cannot disagree.
func datasetFlags(fs *flagSet, s *dataset.Spec) {
	d := dataset.Standard("").WithDefaults()
	fs.IntVar(&s.Pods, "pods", d.Pods, "number of Pods to seed")
	fs.IntVar(&s.PodEnv, "pod-env", d.PodEnv, "env vars in a Pod's main container: sets the Pod size (4 is about 20 KB of JSON)")
	fs.IntVar(&s.ConfigMaps, "configmaps", d.ConfigMaps, "number of ConfigMaps to seed")
	fs.IntVar(&s.ConfigMapBytes, "configmap-bytes", d.ConfigMapBytes, "data bytes per ConfigMap")
	fs.IntVar(&s.Secrets, "secrets", d.Secrets, "number of Secrets to seed")
	fs.IntVar(&s.SecretBytes, "secret-bytes", d.SecretBytes, "data bytes per Secret")
	fs.IntVar(&s.Widgets, "widgets", d.Widgets, "number of Widget custom resources to seed (installs the CRD)")
	fs.IntVar(&s.WidgetBytes, "widget-bytes", d.WidgetBytes, "spec bytes per Widget")
}
