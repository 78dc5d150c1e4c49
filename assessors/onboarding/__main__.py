"""``python -m assessors.onboarding``: see :mod:`assessors.onboarding.cli`."""
from assessors.onboarding.cli import main

if __name__ == "__main__":
    main()
