package agent

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentledger/agentledger/internal/secretfmt"
)

// azureAPIVersion is the shape of Azure OpenAI's api-version values:
// a date, of a preview release or not ("2024-10-21", "2025-04-01-preview").
var azureAPIVersion = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}(-preview)?$`)

// azureDeployment is what an Azure deployment name may hold, so that a
// model name becomes one path segment of the URL as it is.
var azureDeployment = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Check reports what is wrong with c's endpoint settings before any task
// runs: a base URL that is not an http(s) URL (go-openai would take it and
// fail every call), and the Azure OpenAI settings; any other model name is
// the endpoint's to judge. Messages show the URL with its password masked
// (never url.Parse's error, which quotes it whole).
func (c Config) Check() error {
	if c.AzureAPIVersion == "" {
		if c.BaseURL == "" {
			return nil
		}
		if _, err := httpURL(c.BaseURL, "https://api.openai.com/v1"); err != nil {
			return err
		}
		return nil
	}
	if !azureAPIVersion.MatchString(c.AzureAPIVersion) {
		return fmt.Errorf("azure api-version %q is not a date like 2024-10-21 (or 2025-04-01-preview)", c.AzureAPIVersion)
	}
	if c.BaseURL == "" {
		return fmt.Errorf("an azure api-version needs the base URL of the resource (https://<resource>.openai.azure.com)")
	}
	u, err := httpURL(c.BaseURL, "https://<resource>.openai.azure.com")
	if err != nil {
		return fmt.Errorf("azure %w", err)
	}
	if p := strings.TrimRight(u.Path, "/"); strings.HasSuffix(p, "/openai") || strings.HasSuffix(p, "/openai/v1") ||
		strings.Contains(p, "/deployments") {
		return fmt.Errorf("azure base URL %q: give the resource's endpoint without /openai or a deployment "+
			"(https://<resource>.openai.azure.com); the deployment is the model name. Azure's v1 API "+
			"(.../openai/v1) takes no api-version: leave it unset for that", secretfmt.URL(c.BaseURL))
	}
	if c.Model != "" {
		return checkDeployment(c.Model)
	}
	return nil
}

// httpURL parses raw, a model endpoint's base URL, as an http(s) URL with a
// host; like names the form expected.
func httpURL(raw, like string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("base URL %q does not parse as a URL: give an http(s) URL like %s", secretfmt.URL(raw), like)
	}
	if u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("base URL %q is not an http(s) URL like %s", secretfmt.URL(raw), like)
	}
	return u, nil
}

// checkDeployment reports a model name that cannot name an Azure deployment.
func checkDeployment(model string) error {
	if !azureDeployment.MatchString(model) {
		return fmt.Errorf("model %q cannot name an Azure deployment: use letters, digits, '.', '-' and '_'", model)
	}
	return nil
}

// clientConfig is go-openai's configuration for the endpoint: OpenAI's API
// shape, or Azure OpenAI's when an api-version is set.
func (a *Agent) clientConfig() openai.ClientConfig {
	if a.cfg.AzureAPIVersion == "" {
		oc := openai.DefaultConfig(a.cfg.APIKey)
		oc.BaseURL = a.cfg.BaseURL
		return oc
	}
	oc := openai.DefaultAzureConfig(a.cfg.APIKey, a.cfg.BaseURL)
	oc.APIVersion = a.cfg.AzureAPIVersion
	// go-openai's default mapper rewrites names ("gpt-3.5-turbo" loses its
	// dot); the model here already is the deployment's name.
	oc.AzureModelMapperFunc = func(model string) string { return model }
	return oc
}
