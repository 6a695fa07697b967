import json

def call_api(prompt, options, context):
    return json.loads(prompt)
