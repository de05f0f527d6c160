"""Build step: the project's own models (models/*/*.osim) ship inside the wheel as osim_emb/data/models.

The repository keeps one copy (models/); an editable install reads it there, a regular install from the copy
this step puts in the wheel (osim_emb.io.builtin_models looks in both places)."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithModels(build_py):
    def run(self):
        super().run()
        here = Path(__file__).resolve().parent
        for src in sorted((here / "models").glob("*/*.osim")):
            dst = Path(self.build_lib) / "osim_emb" / "data" / "models" / src.parent.name / src.name
            dst.parent.mkdir(parents=True, exist_ok=True)
            self.copy_file(str(src), str(dst))


setup(cmdclass={"build_py": BuildWithModels})
