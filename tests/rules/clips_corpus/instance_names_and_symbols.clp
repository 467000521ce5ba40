; clips: loads -- symbols of many shapes and instance names
(deffacts s (x [inst] a-b c_d e.f 1a +x -y <z> =w))
