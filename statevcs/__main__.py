"""``python -m statevcs``: the same command line as the ``statevcs`` console script."""

from statevcs.cli import main

if __name__ == "__main__":
    main()
