"""Where numba caches the package's own compiled functions: ``<cache root>/numba``.

numba's default locator writes the cache files (``*.nbi``, ``*.nbc``) of a function compiled
with ``cache=True`` into the ``__pycache__`` folder next to its source file. For an installed
package that is ``site-packages/hamiltonia/**/__pycache__``: pip does not know those files,
so uninstalling leaves the folders behind, and after a reinstall in editable mode Python
imports ``hamiltonia`` from them as an empty namespace package (issue 26).

:func:`install` puts :class:`PackageCacheLocator` first in numba's list of cache locators.
It claims only source files inside this package and stores their caches under
``<cache root>/numba/hamiltonia-<hash>/<the file's folder relative to the package>``
(``<cache root>`` from :func:`hamiltonia.datasets.fetch.cache_root`: ``$HAMILTONIA_CACHE``,
else ``$XDG_CACHE_HOME/hamiltonia`` or ``~/.cache/hamiltonia``); the hash is of the package's
absolute path, so two installs never share (or overwrite) each other's caches. Every other
file falls through to numba's own locators, so the user's own caches, and the global
``NUMBA_CACHE_DIR``, are left alone. (The kernels the package generates already live in
``<cache root>/kernels``, outside the package, and numba caches them next to themselves.)

numba picks the locator when a function is decorated, so :func:`install` must run before
any decoration with ``cache=True`` in the package: each module that decorates so calls it
first (``tests/compiled/test_cache.py`` checks that none is missed). It is not called on
``import hamiltonia``: that would import numba there, 0.13 s more on an import of 0.3 s
(measured), for sessions that never compile anything. A user's explicit
``NUMBA_CACHE_LOCATOR_CLASSES`` replaces numba's whole list, this class included.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile

from numba.core import caching

__all__ = ["PackageCacheLocator", "install"]

#: The package folder, resolved, as numba's source file names are compared against it.
PACKAGE_DIR = os.path.dirname(os.path.realpath(__file__))

#: A folder of this process's own, used only when the cache folder cannot be written: the
#: caches are then lost at exit, but still never written inside the package.
_FALLBACK: list[str] = []


def _inside_package(py_file: str) -> str | None:
    """``py_file``'s folder relative to the package, or ``None`` when it lies outside."""
    folder = os.path.dirname(os.path.realpath(py_file))
    try:
        relative = os.path.relpath(folder, PACKAGE_DIR)
    except ValueError:  # another drive (Windows)
        return None
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return None
    return relative


def package_cache_dir() -> str:
    """The cache folder of this install's package: ``<cache root>/numba/hamiltonia-<hash>``
    (read when a function is decorated, so ``$HAMILTONIA_CACHE`` set before then counts)."""
    # Imported here: hamiltonia.datasets must not be imported while hamiltonia is loading.
    from hamiltonia.datasets.fetch import cache_root

    digest = hashlib.sha256(PACKAGE_DIR.encode()).hexdigest()[:16]
    return os.path.join(cache_root(), "numba", f"hamiltonia-{digest}")


class PackageCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """numba cache locator for the functions defined in this package's source files (module
    docs); the source stamp and disambiguator are numba's, from the source file.

    Parameters
    ----------
    py_func : function
        The Python function being compiled.
    py_file : str
        Its source file.
    """

    def __init__(self, py_func, py_file, relative=None):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._relative = _inside_package(py_file) if relative is None else relative
        self._cache_path = os.path.normpath(os.path.join(package_cache_dir(), self._relative))

    def get_cache_path(self):
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        """The locator of ``py_func``, or ``None`` (so that numba asks its own locators)
        when its source file is not a file of this package."""
        relative = _inside_package(py_file) if os.path.exists(py_file) else None
        if relative is None:
            return None
        self = cls(py_func, py_file, relative)
        try:
            self.ensure_cache_path()
        except OSError:
            # An unwritable cache folder: numba's next locator would write inside the
            # package, the very thing this class exists to prevent. A folder for this
            # process instead, removed at its exit.
            if not _FALLBACK:
                folder = tempfile.mkdtemp(prefix="hamiltonia-numba-")
                atexit.register(shutil.rmtree, folder, True)
                _FALLBACK.append(folder)
            self._cache_path = os.path.normpath(os.path.join(_FALLBACK[0], relative))
            self.ensure_cache_path()
        return self


def _impl_class():
    # Newer numba renamed _CacheImpl to CacheImpl; both hold the list of locator classes.
    impl = getattr(caching, "CacheImpl", None)
    return impl if impl is not None else caching._CacheImpl


def install() -> None:
    """Put :class:`PackageCacheLocator` first in numba's cache locators (once; cheap to
    call again). Call it before decorating a function of the package with ``cache=True``."""
    locators = _impl_class()._locator_classes
    if not locators or locators[0] is not PackageCacheLocator:
        if PackageCacheLocator in locators:
            locators.remove(PackageCacheLocator)
        locators.insert(0, PackageCacheLocator)
