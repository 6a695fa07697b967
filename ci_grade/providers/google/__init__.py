"""Google's model APIs: `google:` (the Gemini API) and `vertex:` (Gemini, Claude and Llama on
Vertex AI), through the official `google-genai` SDK and `google-auth` (the `ci-grade[google]` extra)."""
