// The tiled q4p16 matmul with float32 shared tiles (matmul_tiled.glsl says what and why).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

#define TILE_T float
#define load_x(i) x[i]
#include "matmul_tiled.glsl"
