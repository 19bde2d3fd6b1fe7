"""Guards that the suite looks at the installed build, never the source tree by accident."""

import os
import pathlib

import fastser

SOURCE_TREE = pathlib.Path(__file__).resolve().parent.parent


def pytest_report_header() -> str:
    return f"fastser {fastser.__version__} from {pathlib.Path(fastser.__file__).parent}, " \
           f"COMPILED={fastser.COMPILED}, FASTSER_EXPECT={os.environ.get('FASTSER_EXPECT')}"
