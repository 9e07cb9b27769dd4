// Translation unit that owns the precompiled header (see core/CMakeLists.txt).
