"""A stand-in for the Azure CLI's `az account get-access-token`, as `azure/login` leaves it signed in.

Run as `python az_cli.py <token file> <log file> <az arguments...>` (a wrapper named `az` on PATH
passes the first two): it logs its arguments, one JSON line each call, and prints the access
token JSON the real command prints, for the resource `https://ai.azure.com` only (the Foundry
scope); any other request fails as the CLI does.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

RESOURCE = "https://ai.azure.com"


def main(token_file: str, log_file: str, args: list[str]) -> int:
    with open(log_file, "a", encoding="utf-8") as log:
        log.write(json.dumps(args) + "\n")
    options = dict(zip(args[2::2], args[3::2], strict=False))
    if args[:2] != ["account", "get-access-token"] or options.get("--output") != "json":
        print(f"ERROR: the stand-in does not serve 'az {' '.join(args)}'", file=sys.stderr)
        return 2
    if options.get("--resource") != RESOURCE:
        print(f"ERROR: AADSTS500011: The resource principal named {options.get('--resource')} was not found in the tenant.", file=sys.stderr)
        return 1
    expires = int(time.time()) + 3600
    print(json.dumps({
        "accessToken": Path(token_file).read_text(encoding="utf-8").strip(),
        "expiresOn": time.strftime("%Y-%m-%d %H:%M:%S.000000", time.localtime(expires)),
        "expires_on": expires,
        "subscription": "00000000-0000-0000-0000-000000000001",
        "tenant": "00000000-0000-0000-0000-000000000002",
        "tokenType": "Bearer",
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
