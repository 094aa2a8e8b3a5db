"""pytest plugin: with ``CHATFMT_SWAP=1``, LMDeploy's built-in parser names are chatfmt's."""

import os

if os.environ.get("CHATFMT_SWAP") == "1":
    from chatfmt.integrations.lmdeploy import register

    register(replace=True)
