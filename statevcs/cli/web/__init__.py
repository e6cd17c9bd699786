"""``statevcs serve``: a repository's history in a web browser (the ``[web]`` extra).

:mod:`.api` answers the JSON API from the repository alone (no web framework);
:mod:`.app` puts it on Starlette with the static front end in ``static/`` (plain JS and CSS,
no build step, nothing downloaded); :mod:`.server` runs that on uvicorn. See ``docs/serve.md``.
"""

from ...errors import require_module

require_module("the history browser (statevcs serve)", "starlette", "web")
require_module("the history browser (statevcs serve)", "uvicorn", "web")
