package agent_test

import (
	"strings"
	"testing"

	"github.com/agentledger/agentledger/agent"
)

func TestConfigCheck(t *testing.T) {
	t.Parallel()
	const res = "https://example-resource.openai.azure.com"
	for _, tc := range []struct {
		cfg  agent.Config
		want string // "" when fine
	}{
		{agent.Config{}, ""},
		{agent.Config{BaseURL: "http://127.0.0.1:11434/v1", Model: "llama3.1:8b"}, ""},
		{agent.Config{BaseURL: res, AzureAPIVersion: "2024-10-21", Model: "gpt-4o-prod"}, ""},
		{agent.Config{BaseURL: res + "/", AzureAPIVersion: "2025-04-01-preview"}, ""},
		{agent.Config{BaseURL: "https://apim.example.net/ai", AzureAPIVersion: "2024-10-21"}, ""},
		{agent.Config{BaseURL: res, AzureAPIVersion: "latest"}, `azure api-version "latest" is not a date like 2024-10-21`},
		{agent.Config{BaseURL: res, AzureAPIVersion: "2024-10-21 "}, `is not a date`},
		{agent.Config{AzureAPIVersion: "2024-10-21"}, "an azure api-version needs the base URL of the resource"},
		{agent.Config{BaseURL: "example-resource.openai.azure.com", AzureAPIVersion: "2024-10-21"}, "is not an http(s) URL"},
		{agent.Config{BaseURL: res + "/openai", AzureAPIVersion: "2024-10-21"}, "without /openai or a deployment"},
		{agent.Config{BaseURL: res + "/openai/v1/", AzureAPIVersion: "2024-10-21"}, "without /openai or a deployment"},
		{agent.Config{BaseURL: res + "/openai/deployments/gpt-4o", AzureAPIVersion: "2024-10-21"}, "without /openai or a deployment"},
		{agent.Config{BaseURL: res, AzureAPIVersion: "2024-10-21", Model: "gpt 4o"}, `model "gpt 4o" cannot name an Azure deployment`},
	} {
		err := tc.cfg.Check()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v: Check() = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
