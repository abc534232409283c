// Intentionally empty translation unit: lets a module library be declared before it has
// sources of its own (CMake rejects a STATIC library without sources).
