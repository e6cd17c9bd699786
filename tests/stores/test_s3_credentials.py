"""What a newcomer sees when the S3 credentials are missing or wrong: what to set, no XML."""

from __future__ import annotations

import os
import subprocess
import sys

from seaweedfs import SeaweedFS

_INIT = """
import statevcs, sys
try:
    statevcs.Repo.init(sys.argv[1])
except statevcs.StoreError as e:
    print(type(e).__name__, e)
"""


def _init_without(seaweedfs: SeaweedFS, prefix: str, env: dict[str, str]) -> str:
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    result = subprocess.run(
        [sys.executable, "-c", _INIT, seaweedfs.url(prefix)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, **env},
        check=True,
    )
    return result.stdout


def test_no_credentials_in_the_environment_says_which_to_set(seaweedfs: SeaweedFS) -> None:
    out = _init_without(seaweedfs, "no-credentials", {"AWS_REGION": "us-east-1"})
    assert "no S3 credentials were found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in out
    assert "<?xml" not in out


def test_wrong_credentials_say_to_check_them_without_the_xml_body(seaweedfs: SeaweedFS) -> None:
    out = _init_without(
        seaweedfs,
        "wrong-credentials",
        {
            "AWS_ACCESS_KEY_ID": "nobody",
            "AWS_SECRET_ACCESS_KEY": "wrong",
            "AWS_REGION": "us-east-1",
        },
    )
    assert "check the credentials in the environment (AWS_ACCESS_KEY_ID" in out
    assert "<?xml" not in out
    assert "wrong" not in out.replace("wrong-credentials", "")
