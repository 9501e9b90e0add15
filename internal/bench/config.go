package bench

import (
	"errors"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ClientConfig is the part of a rest.Config that crosses the process boundary
// to a child: where the server (the parent's proxy) is and who the child is.
// Functions (Dial, WrapTransport) cannot cross; the child adds its own.
type ClientConfig struct {
	Host            string                           `json:"host"`
	APIPath         string                           `json:"apiPath,omitempty"`
	Insecure        bool                             `json:"insecure,omitempty"`
	ServerName      string                           `json:"serverName,omitempty"`
	CAData          []byte                           `json:"caData,omitempty"`
	CertData        []byte                           `json:"certData,omitempty"`
	KeyData         []byte                           `json:"keyData,omitempty"`
	BearerToken     string                           `json:"bearerToken,omitempty"`
	BearerTokenFile string                           `json:"bearerTokenFile,omitempty"`
	Username        string                           `json:"username,omitempty"`
	Password        string                           `json:"password,omitempty"`
	Impersonate     rest.ImpersonationConfig         `json:"impersonate,omitzero"`
	ExecProvider    *clientcmdapi.ExecConfig         `json:"execProvider,omitempty"`
	AuthProvider    *clientcmdapi.AuthProviderConfig `json:"authProvider,omitempty"`
	QPS             float32                          `json:"qps,omitempty"`
	Burst           int                              `json:"burst,omitempty"`
	UserAgent       string                           `json:"userAgent,omitempty"`
}

// clientConfigOf captures cfg, reading TLS files into data so that the child
// does not depend on the parent's files.
func clientConfigOf(cfg *rest.Config) (ClientConfig, error) {
	c := rest.CopyConfig(cfg)
	if err := rest.LoadTLSFiles(c); err != nil {
		return ClientConfig{}, err
	}
	if c.Dial != nil || c.Transport != nil || c.Proxy != nil {
		return ClientConfig{}, errors.New("client config with a custom dialer, transport or proxy cannot be passed to a child process")
	}
	return ClientConfig{
		Host:            c.Host,
		APIPath:         c.APIPath,
		Insecure:        c.Insecure,
		ServerName:      c.ServerName,
		CAData:          c.CAData,
		CertData:        c.CertData,
		KeyData:         c.KeyData,
		BearerToken:     c.BearerToken,
		BearerTokenFile: c.BearerTokenFile,
		Username:        c.Username,
		Password:        c.Password,
		Impersonate:     c.Impersonate,
		ExecProvider:    c.ExecProvider,
		AuthProvider:    c.AuthProvider,
		QPS:             c.QPS,
		Burst:           c.Burst,
		UserAgent:       c.UserAgent,
	}, nil
}

// restConfig rebuilds the rest.Config.
func (c ClientConfig) restConfig() *rest.Config {
	return &rest.Config{
		Host:    c.Host,
		APIPath: c.APIPath,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure: c.Insecure, ServerName: c.ServerName,
			CAData: c.CAData, CertData: c.CertData, KeyData: c.KeyData,
		},
		BearerToken:     c.BearerToken,
		BearerTokenFile: c.BearerTokenFile,
		Username:        c.Username,
		Password:        c.Password,
		Impersonate:     c.Impersonate,
		ExecProvider:    c.ExecProvider,
		AuthProvider:    c.AuthProvider,
		QPS:             c.QPS,
		Burst:           c.Burst,
		UserAgent:       c.UserAgent,
	}
}
